package persistence

import (
	"os"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

func TestStoredMatchesFileAfterFlush(t *testing.T) {
	dir := t.TempDir()
	p, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st := session.NewStore(&session.DeterministicSources{})
	defer p.Attach(st)()
	s, err := st.Create(session.Header{ID: "stored", Cwd: "/w"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := p.Stored("absent"); ok {
		t.Fatal("Stored reports a session this store does not hold")
	}
	s.Append(session.TypeTurnStart, session.TurnData{Turn: 1})
	s.Append(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
	next, _, _ := p.Stored("stored")
	if next != 0 {
		t.Fatalf("before flush next = %d, want 0 (events only buffered)", next)
	}
	if err := p.Flush(t.Context(), "stored"); err != nil {
		t.Fatal(err)
	}
	next, size, ok := p.Stored("stored")
	fi, err := os.Stat(dir + "/sessions/stored.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !ok || next != 2 || size != fi.Size() {
		t.Fatalf("Stored = (%d, %d, %v), want (2, %d, true)", next, size, ok, fi.Size())
	}
}
