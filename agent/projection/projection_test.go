package projection_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
)

// counter counts events of one type; it fails on an event whose data
// contains "boom" (panicking when panics is set).
func counter(key, typ string, panics bool) projection.Unit {
	return projection.Fold[int]{
		Name: key, Version: 1,
		Step: func(n int, ev session.Event) (int, error) {
			if strings.Contains(string(ev.Data), "boom") {
				if panics {
					panic("boom")
				}
				return 0, errors.New("boom")
			}
			if ev.Type == typ {
				n++
			}
			return n, nil
		},
	}
}

func newRegistry(t *testing.T, units ...projection.Unit) (*projection.Registry, *session.Store) {
	t.Helper()
	reg := projection.New()
	for _, u := range units {
		if _, err := reg.Register(u); err != nil {
			t.Fatal(err)
		}
	}
	st := session.NewStore(&session.DeterministicSources{Epoch: 1000})
	t.Cleanup(reg.Attach(st))
	return reg, st
}

func equalSnapshots(t *testing.T, got, want projection.Snapshot) {
	t.Helper()
	if got.AsOfSeq != want.AsOfSeq || !maps.EqualFunc(got.Values, want.Values, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
		t.Fatalf("snapshot\n got %d %s\nwant %d %s", got.AsOfSeq, dump(got.Values), want.AsOfSeq, dump(want.Values))
	}
}

func dump(v map[string]json.RawMessage) string { b, _ := json.Marshal(v); return string(b) }

func TestLiveSnapshotEqualsRestoreAfterEveryAppend(t *testing.T) {
	reg, st := newRegistry(t, projection.Timing(), projection.Title(), counter("turns", session.TypeTurnStart, false))
	s, err := st.Create(session.Header{ID: "s"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := reg.Snapshot(s)
	if empty.AsOfSeq != -1 || string(empty.Values["title"]) != "null" || string(empty.Values["subagentTiming"]) != `{"settledMs":0}` {
		t.Fatalf("empty snapshot %d %s", empty.AsOfSeq, dump(empty.Values))
	}
	script := []struct{ typ, data string }{
		{session.TypeTurnStart, `{"turn":1}`},
		{session.TypeSessionTitle, `{"title":"first","source":{"kind":"model"}}`},
		{session.TypeDescriptor, `{"version":2}`},
		{session.TypeRequestContext, `{}`},
		{session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`},
		{session.TypeSessionTitle, `"not an object"`},
		{session.TypeTurnStart, `{"turn":2}`},
	}
	for _, step := range script {
		if _, err := s.AppendRaw(step.typ, json.RawMessage(step.data)); err != nil {
			t.Fatal(err)
		}
		live, err := reg.Snapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		cold, err := reg.Restore(s.MustEvents())
		if err != nil {
			t.Fatal(err)
		}
		equalSnapshots(t, live, cold)
	}
	final, _ := reg.Snapshot(s)
	if string(final.Values["title"]) != `"first"` || string(final.Values["turns"]) != "2" {
		t.Fatalf("final %s", dump(final.Values))
	}
}

func TestTimingUnitFollowsDescriptorAndTurns(t *testing.T) {
	type step struct {
		typ  string
		time int64
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"empty", nil, `{"settledMs":0}`},
		{"turn before any descriptor is dropped", []step{{"turn/start", 10}, {"turn/end", 20}}, `{"settledMs":0}`},
		{"descriptor inside a turn adopts its start", []step{{"turn/start", 10}, {"subagent/descriptor", 15}, {"assistant/chunk", 18}}, `{"settledMs":0,"active":{"since":10,"through":18}}`},
		{"settled turn counts", []step{{"subagent/descriptor", 5}, {"turn/start", 10}, {"step/start", 12}, {"turn/end", 30}}, `{"settledMs":20}`},
		{"two turns add up", []step{{"subagent/descriptor", 5}, {"turn/start", 10}, {"turn/end", 30}, {"turn/start", 40}, {"turn/end", 45}}, `{"settledMs":25}`},
		{"a later descriptor resets but keeps the open span", []step{{"subagent/descriptor", 5}, {"turn/start", 10}, {"turn/end", 30}, {"turn/start", 40}, {"subagent/descriptor", 50}}, `{"settledMs":0,"active":{"since":40,"through":50}}`},
		{"turn end before turn start never goes negative", []step{{"subagent/descriptor", 5}, {"turn/start", 10}, {"turn/end", 3}}, `{"settledMs":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := projection.New()
			if _, err := reg.Register(projection.Timing()); err != nil {
				t.Fatal(err)
			}
			var events []session.Event
			for i, s := range tt.steps {
				events = append(events, session.Event{Type: s.typ, Seq: int64(i), Time: s.time, Data: json.RawMessage(`{}`)})
			}
			snap, err := reg.Restore(events)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(snap.Values["subagentTiming"]); got != tt.want {
				t.Fatalf("timing %s; want %s", got, tt.want)
			}
		})
	}
}

func TestUnitFailurePoisonsOnlyThatSession(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run(fmt.Sprint("panics=", panics), func(t *testing.T) {
			reg, st := newRegistry(t, counter("fragile", session.TypeTurnStart, panics), projection.Title())
			bad, _ := st.Create(session.Header{ID: "bad"}, session.CreateOptions{})
			good, _ := st.Create(session.Header{ID: "good"}, session.CreateOptions{})
			for _, s := range []*session.Session{bad, good} {
				s.AppendRaw(session.TypeTurnStart, json.RawMessage(`{"turn":1}`))
			}
			bad.AppendRaw(session.TypeRequestContext, json.RawMessage(`{"x":"boom"}`))
			bad.AppendRaw(session.TypeTurnStart, json.RawMessage(`{"turn":2}`))
			_, err := reg.Snapshot(bad)
			var ue *projection.UnitError
			if !errors.As(err, &ue) || ue.Key != "fragile" || ue.Seq != 1 {
				t.Fatalf("bad snapshot error %v", err)
			}
			if _, err := reg.Restore(bad.MustEvents()); !errors.As(err, &ue) {
				t.Fatalf("bad restore error %v", err)
			}
			snap, err := reg.Snapshot(good)
			if err != nil || string(snap.Values["fragile"]) != "1" {
				t.Fatalf("good snapshot %s, %v", dump(snap.Values), err)
			}
		})
	}
}

func TestLateUnitAndPreexistingSessionsFoldFromMemory(t *testing.T) {
	reg := projection.New()
	st := session.NewStore(nil)
	early, _ := st.Create(session.Header{ID: "early"}, session.CreateOptions{})
	early.AppendRaw(session.TypeTurnStart, json.RawMessage(`{"turn":1}`))
	detach := reg.Attach(st)
	defer detach()
	restored, err := st.Adopt(session.Header{ID: "restored", CreatedAt: 1}, []session.Event{
		{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage(`{"turn":1}`)},
		{Type: session.TypeTurnStart, Seq: 1, Time: 2, Data: json.RawMessage(`{"turn":2}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	unregister, err := reg.Register(counter("turns", session.TypeTurnStart, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(counter("turns", session.TypeTurnEnd, false)); !errors.Is(err, projection.ErrDuplicateKey) {
		t.Fatalf("duplicate key error %v", err)
	}
	early.AppendRaw(session.TypeTurnStart, json.RawMessage(`{"turn":2}`))
	for s, want := range map[*session.Session]string{early: "2", restored: "2"} {
		snap, err := reg.Snapshot(s)
		if err != nil || string(snap.Values["turns"]) != want {
			t.Fatalf("%s: %s, %v", s.ID(), dump(snap.Values), err)
		}
	}
	unregister()
	unregister()
	if snap, _ := reg.Snapshot(early); len(snap.Values) != 0 {
		t.Fatalf("unregistered unit still served: %s", dump(snap.Values))
	}
	if _, err := reg.Register(counter("turns", session.TypeTurnStart, false)); err != nil {
		t.Fatalf("key not freed: %v", err)
	}
	if err := st.Remove("early"); err != nil {
		t.Fatal(err)
	}
	// A removed session is still readable by folding its memory.
	if snap, err := reg.Snapshot(early); err != nil || string(snap.Values["turns"]) != "2" {
		t.Fatalf("removed session: %s, %v", dump(snap.Values), err)
	}
}

func TestConcurrentAppendsAndSnapshotsStayConsistent(t *testing.T) {
	reg, st := newRegistry(t, counter("turns", session.TypeTurnStart, false), projection.Timing())
	var wg sync.WaitGroup
	for w := range 4 {
		s, _ := st.Create(session.Header{ID: fmt.Sprint("s", w)}, session.CreateOptions{})
		wg.Go(func() {
			for range 200 {
				s.AppendRaw(session.TypeTurnStart, json.RawMessage(`{"turn":1}`))
			}
		})
		wg.Go(func() {
			for range 200 {
				if _, err := reg.Snapshot(s); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				un, err := reg.Register(projection.Fold[int]{Name: fmt.Sprint("late", w), Version: 1})
				if err == nil {
					reg.Snapshot(s)
					un()
				}
			}
		})
	}
	wg.Wait()
	for _, s := range st.List() {
		live, err := reg.Snapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		cold, _ := reg.Restore(s.MustEvents())
		equalSnapshots(t, live, cold)
		if string(live.Values["turns"]) != "200" {
			t.Fatalf("%s turns %s", s.ID(), live.Values["turns"])
		}
	}
}
