package persistence

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// FuzzReadLog feeds arbitrary bytes to the record reader as the file of
// session "s1" (coldView: what Inspect does with the bytes it read). It
// must not panic and must return either a view or a *CorruptError. A view
// must be a valid, closed log; and committing it as Load does (keep the
// valid prefix, append the closers) must read back as the same events,
// clean. It runs in memory, so it is fast; FuzzLoadFile drives the same
// checks through real files.
//
// Run: go test ./persistence -run '^$' -fuzz FuzzReadLog -fuzztime 60s
func FuzzReadLog(f *testing.F) {
	addLogSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := coldView("s1", "s1.jsonl", data)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		checkView(t, data, snap)
		var repaired bytes.Buffer
		repaired.Write(data[:snap.Size])
		if err := encodeEvents(&repaired, snap.Events[len(snap.Events)-snap.Synthetic:]); err != nil {
			t.Fatal(err)
		}
		again, err := coldView("s1", "s1.jsonl", repaired.Bytes())
		if err != nil {
			t.Fatalf("repaired log does not read: %v", err)
		}
		if again.Torn || again.Synthetic != 0 || again.Size != int64(repaired.Len()) || !reflect.DeepEqual(again.Events, snap.Events) {
			t.Fatalf("repaired log reads back torn=%v synthetic=%d size=%d/%d equal=%v", again.Torn, again.Synthetic, again.Size, repaired.Len(), reflect.DeepEqual(again.Events, snap.Events))
		}
	})
}

// FuzzLoadFile writes arbitrary bytes as a session file and runs Inspect,
// Load, Release and Inspect again on it: Inspect does not change the file,
// Load returns Inspect's view and commits it, and the file then reads back
// clean. Slower than FuzzReadLog (real file system calls).
//
// Run: go test ./persistence -run '^$' -fuzz FuzzLoadFile -fuzztime 60s
func FuzzLoadFile(f *testing.F) {
	addLogSeeds(f)
	// One directory for all inputs: calls run one at a time per process.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) { checkReadLog(t, dir, data) })
}

// checkView checks the invariants of a successful cold view of data.
func checkView(t testing.TB, data []byte, snap Snapshot) {
	if err := session.ValidateLog(snap.Events); err != nil {
		t.Fatalf("view is not a valid log: %v", err)
	}
	if session.OpenTurn(snap.Events) {
		t.Fatal("view ends inside a turn")
	}
	if snap.Size > int64(len(data)) || snap.Torn != (snap.Size < int64(len(data))) {
		t.Fatalf("size %d torn %v for %d bytes", snap.Size, snap.Torn, len(data))
	}
}

// addLogSeeds seeds the log fuzzers with small logs (small inputs keep
// the fuzzer's minimization fast): a closed tool turn, an interrupted one,
// a torn tail, a corrupt middle, a seq gap and an unknown type.
func addLogSeeds(f *testing.F) {
	h := string(headerLineFor("s1"))
	closed := h +
		`{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}` + "\n" +
		`{"type":"step/start","seq":1,"time":5,"data":{"turn":1,"step":1}}` + "\n" +
		`{"type":"assistant/message","seq":2,"time":5,"data":{"turn":1,"step":1,"message":{"id":"m","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"read"},{"type":"tool-call","id":"c2","name":"ls"}],"source":{"kind":"model"}}},"surfaceOp":"append"}` + "\n" +
		`{"type":"tool/call","seq":3,"time":5,"data":{"turn":1,"step":1,"callId":"c1","name":"read","arguments":"{}"}}` + "\n" +
		`{"type":"tool/result","seq":4,"time":6,"data":{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"hi"}]}],"source":{"kind":"tool","callId":"c1"}}},"sourceEventSeqs":[3],"surfaceOp":"append"}` + "\n"
	ended := closed +
		`{"type":"step/end","seq":5,"time":6,"data":{"turn":1,"step":1}}` + "\n" +
		`{"type":"turn/end","seq":6,"time":6,"data":{"turn":1,"reason":{"kind":"completed"}}}` + "\n"
	for _, seed := range []string{
		ended,
		closed,
		ended[:len(ended)-9],
		closed + "garbage\n" + `{"type":"step/end","seq":6,"time":6,"data":{"turn":1,"step":1}}` + "\n",
		closed + `{"type":"step/end","seq":9,"time":6,"data":{}}` + "\n",
		closed + `{"type":"vendor/x","seq":5,"time":6,"data":{}}` + "\n" + `{"type":"vendor/y","seq":6,"time":6,"data":{},"ignorable":true}` + "\n",
		h,
		"",
	} {
		f.Add([]byte(seed))
	}
}

var quiet = slog.New(slog.DiscardHandler)

// checkReadLog stores data as the file of session "s1" in dir and checks
// the reader's contract on it.
func checkReadLog(t testing.TB, dir string, data []byte) {
	p := filepath.Join(dir, "sessions", "s1.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ps, err := Open(dir, Options{Logger: quiet, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	snap, err := ps.Inspect(t.Context(), "s1")
	if err != nil {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("Inspect: untyped error %T: %v", err, err)
		}
		if _, lerr := ps.Load(t.Context(), "s1"); !errors.As(lerr, &ce) {
			t.Fatalf("Inspect failed with %v but Load gave %v", err, lerr)
		}
		return
	}
	if !bytes.Equal(mustRead(t, p), data) {
		t.Fatal("Inspect changed the file")
	}
	checkView(t, data, snap)
	loaded, err := ps.Load(t.Context(), "s1")
	if err != nil {
		t.Fatalf("Inspect succeeded, Load failed: %v", err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != loaded.Size {
		t.Fatalf("Load: snapshot size %d, file %v %v", loaded.Size, st, err)
	}
	loaded.Size = snap.Size // Load's Size counts the closers it wrote
	if !reflect.DeepEqual(loaded, snap) {
		t.Fatalf("Load view differs from Inspect view:\n%s\n%s", js(loaded), js(snap))
	}
	if err := ps.Release("s1"); err != nil {
		t.Fatal(err)
	}
	again, err := ps.Inspect(t.Context(), "s1")
	if err != nil {
		t.Fatalf("after Load: %v", err)
	}
	if again.Torn || again.Synthetic != 0 || !reflect.DeepEqual(again.Events, snap.Events) {
		t.Fatalf("after Load: torn %v synthetic %d, events equal %v", again.Torn, again.Synthetic, reflect.DeepEqual(again.Events, snap.Events))
	}
}

func mustRead(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
