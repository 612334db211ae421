package persistence

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// loadRepairAppend loads id (committing recovery), checks the loaded view
// against want, appends one more turn, and checks that a fresh Store reads
// the repaired log plus the new turn back cleanly.
func loadRepairAppend(t *testing.T, dir, id string, want Snapshot) {
	t.Helper()
	ps := openStore(t, dir)
	got, err := ps.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	sameEvents(t, got.Events, want.Events)
	if got.Torn != want.Torn || got.Synthetic != want.Synthetic {
		t.Fatalf("Load: torn %v synthetic %d, want %v %d", got.Torn, got.Synthetic, want.Torn, want.Synthetic)
	}
	path := filepath.Join(dir, "sessions", id+".jsonl")
	if st, _ := os.Stat(path); st.Size() != got.Size {
		t.Fatalf("file size %d after Load, snapshot size %d", st.Size(), got.Size)
	}
	// Continue the session as a resume would: adopt, run a turn, remove.
	st := liveStore(t, ps)
	s, err := st.Adopt(got.Header, got.Events)
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	appendToolTurn(t, s, session.LastTurn(got.Events)+1)
	if err := st.Remove(id); err != nil {
		t.Fatal(err)
	}
	back, err := openStore(t, dir).Inspect(t.Context(), id)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if back.Torn || back.Synthetic != 0 {
		t.Fatalf("read back after repair: torn %v synthetic %d", back.Torn, back.Synthetic)
	}
	sameEvents(t, back.Events, s.MustEvents())
}

// A log cut at every byte offset of its last line inspects to the valid
// prefix and loads to a repaired, appendable log.
func TestTornTailEveryOffset(t *testing.T) {
	src := t.TempDir()
	path, events := writeSession(t, src, "s1", nil)
	data := readBytes(t, path)
	lastStart := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	prefix := events[:len(events)-1] // without the final turn/end
	for cut := lastStart; cut <= len(data); cut++ {
		dir := t.TempDir()
		p := filepath.Join(dir, "sessions", "s1.jsonl")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		writeBytes(t, p, data[:cut])

		want := Snapshot{Torn: cut > lastStart && cut < len(data), Events: events}
		if cut < len(data) {
			// The turn/end was lost: the turn is open again and Inspect
			// closes it in memory as interrupted.
			cl, err := session.CloseInterruptedTurn("s1", prefix)
			if err != nil || len(cl) != 1 || cl[0].Type != session.TypeTurnEnd {
				t.Fatalf("closers of the prefix: %v %v", cl, err)
			}
			want.Events, want.Synthetic = append(append([]session.Event(nil), prefix...), cl...), 1
		}
		got, err := openStore(t, dir).Inspect(t.Context(), "s1")
		if err != nil {
			t.Fatalf("cut %d: Inspect: %v", cut, err)
		}
		sameEvents(t, got.Events, want.Events)
		wantSize := int64(lastStart)
		if cut == len(data) {
			wantSize = int64(cut)
		}
		if got.Torn != want.Torn || got.Synthetic != want.Synthetic || got.Size != wantSize {
			t.Fatalf("cut %d: torn %v synthetic %d size %d; want torn %v synthetic %d", cut, got.Torn, got.Synthetic, got.Size, want.Torn, want.Synthetic)
		}
		if b := readBytes(t, p); !bytes.Equal(b, data[:cut]) {
			t.Fatalf("cut %d: Inspect changed the file", cut)
		}
		loadRepairAppend(t, dir, "s1", want)
		if want.Torn {
			if b := readBytes(t, p+".broken"); !bytes.Equal(b, data[lastStart:cut]) {
				t.Fatalf("cut %d: .broken holds %q, want %q", cut, b, data[lastStart:cut])
			}
		}
	}
}

// A log that ends inside a turn inspects with synthetic closers (without
// touching the file) and loads with them made durable.
func TestInterruptedTurn(t *testing.T) {
	tests := []struct {
		name   string
		extend func(t *testing.T, s *session.Session)
		want   []string // types of the closers
		codes  []string // error codes of the synthetic tool results
	}{
		{"after tool/call", func(t *testing.T, s *session.Session) {
			appendOpenToolTurn(t, s, 2, false)
		}, []string{session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd}, []string{session.CodeToolOutcomeUnknown}},
		{"call planned, not started", func(t *testing.T, s *session.Session) {
			appendOpenToolTurn(t, s, 2, false)
			// Two calls in one reply: the second never got its tool/call.
			mustAppend(t, s, session.TypeAssistantMessage, session.AssistantMessageData{Turn: 2, Step: 1, Message: session.Message{
				ID: "m", Role: session.RoleAssistant, Content: []session.Block{
					{Type: session.BlockToolCall, ID: "late", Name: "read"},
				}}})
		}, []string{session.TypeToolResult, session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd}, []string{session.CodeToolOutcomeUnknown, session.CodeToolNotStarted}},
		{"step ended", func(t *testing.T, s *session.Session) {
			appendOpenToolTurn(t, s, 2, true)
		}, []string{session.TypeTurnEnd}, nil},
		{"step open, no calls", func(t *testing.T, s *session.Session) {
			mustAppend(t, s, session.TypeTurnStart, session.TurnData{Turn: 2})
			mustAppend(t, s, session.TypeStepStart, session.StepData{Turn: 2, Step: 1})
			mustAppend(t, s, session.TypeAssistantChunk, session.AssistantChunkData{Turn: 2, Step: 1, Chunk: session.Chunk{Type: session.ChunkText, Text: "par"}})
		}, []string{session.TypeStepEnd, session.TypeTurnEnd}, nil},
		{"turn just started", func(t *testing.T, s *session.Session) {
			mustAppend(t, s, session.TypeTurnStart, session.TurnData{Turn: 2})
		}, []string{session.TypeTurnEnd}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, events := writeSession(t, dir, "s1", func(s *session.Session) { tt.extend(t, s) })
			before := readBytes(t, path)
			got, err := openStore(t, dir).Inspect(t.Context(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readBytes(t, path), before) {
				t.Fatal("Inspect changed the file")
			}
			if got.Synthetic != len(tt.want) || len(got.Events) != len(events)+len(tt.want) {
				t.Fatalf("synthetic %d, events %d; want %d closers after %d events", got.Synthetic, len(got.Events), len(tt.want), len(events))
			}
			sameEvents(t, got.Events[:len(events)], events)
			last := events[len(events)-1]
			var codes []string
			for i, ev := range got.Events[len(events):] {
				if ev.Type != tt.want[i] || ev.Seq != int64(len(events)+i) || ev.Time != last.Time {
					t.Fatalf("closer %d: %s seq %d time %d; want %s seq %d time %d", i, ev.Type, ev.Seq, ev.Time, tt.want[i], len(events)+i, last.Time)
				}
				switch ev.Type {
				case session.TypeToolResult:
					d, err := session.DecodeData[session.ToolResultData](ev)
					if err != nil || d.Error == nil || len(d.Message.Content) != 1 || !d.Message.Content[0].IsError || ev.SurfaceOp == nil || len(ev.SourceEventSeqs) != 1 {
						t.Fatalf("synthetic tool result %s: %v", js(ev), err)
					}
					codes = append(codes, d.Error.Code)
				case session.TypeTurnEnd:
					d, _ := session.DecodeData[session.TurnEndData](ev)
					if d.Reason.Kind != session.TurnEndInterrupted || d.Turn != 2 {
						t.Fatalf("turn/end %s", ev.Data)
					}
				}
			}
			if js(codes) != js(tt.codes) {
				t.Fatalf("tool result codes %v, want %v", codes, tt.codes)
			}
			if err := session.ValidateLog(got.Events); err != nil {
				t.Fatal(err)
			}
			if _, err := session.History(got.Events); err != nil {
				t.Fatal(err)
			}
			loadRepairAppend(t, dir, "s1", got)
		})
	}
}

// Defects other than a torn final line are typed errors, from Inspect and
// from Load alike, and Load leaves the session unlocked.
func TestCorruptLogs(t *testing.T) {
	ev := func(seq int64, typ, data string, extra string) string {
		return `{"type":"` + typ + `","seq":` + itoa(seq) + `,"time":1,"data":` + data + extra + "}\n"
	}
	good := []string{
		ev(0, session.TypeTurnStart, `{"turn":1}`, ""),
		ev(1, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`, ""),
	}
	tests := []struct {
		name  string
		lines []string // after the header; nil header means raw
		raw   []byte
		line  int
		check func(t *testing.T, err error)
	}{
		{name: "garbage middle line", lines: []string{good[0], "not json\n", good[1]}, line: 3, check: as[*json.SyntaxError]},
		{name: "empty middle line", lines: []string{good[0], "\n", good[1]}, line: 3},
		{name: "seq gap", lines: []string{good[0], ev(2, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`, "")}, line: 3, check: as[*session.FormatError]},
		{name: "unknown required type", lines: []string{good[0], ev(1, "vendor/thing", `{}`, ""), ev(2, session.TypeTurnEnd, `{"turn":1}`, "")}, line: 3, check: func(t *testing.T, err error) {
			as[*session.UnsupportedTypeError](t, err)
			if !errors.Is(err, session.ErrUnsupportedType) {
				t.Fatal("not ErrUnsupportedType")
			}
		}},
		{name: "unknown required type last", lines: []string{good[0], ev(1, "vendor/thing", `{}`, "")}, line: 3, check: as[*session.UnsupportedTypeError]},
		{name: "surface event without surfaceOp", lines: []string{good[0], ev(1, session.TypeUserMessage, `{"id":"m","role":"user","content":[],"source":{"kind":"user"}}`, "")}, line: 3, check: as[*session.FormatError]},
		{name: "surfaceOp on a log-only event", lines: []string{ev(0, session.TypeTurnStart, `{"turn":1}`, `,"surfaceOp":"append"`)}, line: 2, check: as[*session.FormatError]},
		{name: "no data", lines: []string{`{"type":"turn/start","seq":0,"time":1}` + "\n"}, line: 2, check: as[*session.FormatError]},
		{name: "malformed payload in open turn", lines: []string{ev(0, session.TypeTurnStart, `"x"`, "")}, line: 2, check: as[*session.FormatError]},
		{name: "bad header", raw: []byte(`{"type":"session","id":"s1"}` + "\n"), line: 1, check: as[*session.HeaderError]},
		{name: "header of another session", raw: append(headerLineFor("s2"), good[0]...), line: 1, check: as[*session.HeaderError]},
		{name: "empty file", raw: []byte{}, line: 1},
		{name: "torn header", raw: headerLineFor("s1")[:20], line: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "sessions", "s1.jsonl")
			os.MkdirAll(filepath.Dir(p), 0o700)
			data := tt.raw
			if data == nil {
				data = headerLine(t, "s1")
				for _, l := range tt.lines {
					data = append(data, l...)
				}
			}
			writeBytes(t, p, data)
			ps := openStore(t, dir)
			_, ierr := ps.Inspect(t.Context(), "s1")
			_, lerr := ps.Load(t.Context(), "s1")
			for _, err := range []error{ierr, lerr} {
				var ce *CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("got %v, want *CorruptError", err)
				}
				if ce.Line != tt.line {
					t.Fatalf("line %d, want %d (%v)", ce.Line, tt.line, err)
				}
				if tt.check != nil {
					tt.check(t, err)
				}
			}
			if !bytes.Equal(readBytes(t, p), data) {
				t.Fatal("a corrupt file was changed")
			}
			// The failed Load does not keep the lock.
			if _, err := openStore(t, dir).Load(t.Context(), "s1"); errors.As(err, new(*LockedError)) {
				t.Fatalf("failed Load kept the lock: %v", err)
			}
		})
	}
}

// An unknown event marked ignorable is kept and does not block reading.
func TestIgnorableUnknownType(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sessions", "s1.jsonl")
	os.MkdirAll(filepath.Dir(p), 0o700)
	data := append(headerLine(t, "s1"), `{"type":"vendor/x","seq":0,"time":1,"data":{"a":1},"ignorable":true}`+"\n"...)
	writeBytes(t, p, data)
	got, err := openStore(t, dir).Inspect(t.Context(), "s1")
	if err != nil || len(got.Events) != 1 || !got.Events[0].Ignorable {
		t.Fatalf("Inspect: %+v, %v", got, err)
	}
}

// The etcd-style corruption table: each damage is applied to a healthy
// log; where it is recoverable (a torn tail) Inspect shows the prefix,
// Load repairs, and the log can be appended to and read back.
func TestCorruptionTable(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(data []byte) []byte
		lost    int  // events lost from the end
		torn    bool // Inspect reports a torn tail
		line    int  // non-zero: unrecoverable corruption at this line
	}{
		{"truncate mid-line", func(d []byte) []byte { return d[:len(d)-7] }, 1, true, 0},
		{"drop trailing newline", func(d []byte) []byte { return d[:len(d)-1] }, 1, true, 0},
		{"zero the tail in place", func(d []byte) []byte {
			for i := len(d) - 10; i < len(d); i++ {
				d[i] = 0
			}
			return d
		}, 1, true, 0},
		{"zero bytes appended", func(d []byte) []byte { return append(d, make([]byte, 4096)...) }, 0, true, 0},
		{"zeroed final line with newline", func(d []byte) []byte {
			start := bytes.LastIndexByte(d[:len(d)-1], '\n') + 1
			for i := start; i < len(d)-1; i++ {
				d[i] = 0
			}
			return d
		}, 1, true, 0},
		{"partial line appended", func(d []byte) []byte { return append(d, `{"type":"turn/st`...) }, 0, true, 0},
		{"break JSON mid-file", func(d []byte) []byte {
			lines := bytes.SplitAfter(d, []byte("\n"))
			lines[4] = []byte("{\"type\":\n")
			return bytes.Join(lines, nil)
		}, 0, false, 5},
		{"zero bytes mid-file", func(d []byte) []byte {
			lines := bytes.SplitAfter(d, []byte("\n"))
			for i := range len(lines[3]) - 1 {
				lines[3][i] = 0
			}
			return bytes.Join(lines, nil)
		}, 0, false, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, events := writeSession(t, dir, "s1", nil)
			writeBytes(t, path, tt.corrupt(readBytes(t, path)))
			got, err := openStore(t, dir).Inspect(t.Context(), "s1")
			if tt.line != 0 {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Line != tt.line {
					t.Fatalf("Inspect: %v, want corruption at line %d", err, tt.line)
				}
				if _, err := openStore(t, dir).Load(t.Context(), "s1"); !errors.As(err, &ce) {
					t.Fatalf("Load: %v, want *CorruptError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Torn != tt.torn {
				t.Fatalf("torn %v, want %v", got.Torn, tt.torn)
			}
			kept := events[:len(events)-tt.lost]
			sameEvents(t, got.Events[:len(kept)], kept)
			if len(got.Events) != len(kept)+got.Synthetic {
				t.Fatalf("%d events, want %d + %d synthetic", len(got.Events), len(kept), got.Synthetic)
			}
			loadRepairAppend(t, dir, "s1", got)
		})
	}
}

func as[T error](t *testing.T, err error) {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("%v: not a %T", err, target)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func headerLineFor(id string) []byte {
	b, _ := session.MarshalHeaderLine(session.Header{ID: id, CreatedAt: 1})
	return append(b, '\n')
}
