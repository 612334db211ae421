package projcache_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
)

func setup(t *testing.T) (*projcache.Cache, *projection.Registry, *session.Store, string) {
	t.Helper()
	reg := projection.New()
	if _, err := reg.Register(projection.Title()); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(projection.Timing()); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(&session.DeterministicSources{Epoch: 5000})
	t.Cleanup(reg.Attach(st))
	dir := t.TempDir()
	c, err := projcache.Open(dir, reg)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg, st, dir
}

func titled(t *testing.T, st *session.Store, id, title string) *session.Session {
	t.Helper()
	s, err := st.Create(session.Header{ID: id}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendRaw(session.TypeSessionTitle, json.RawMessage(`{"title":"`+title+`","source":{"kind":"model"}}`)); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheckpointWritesOnlyWhenProjectionMatchesStoredLog(t *testing.T) {
	c, _, st, dir := setup(t)
	s := titled(t, st, "s1", "hello")
	if wrote, err := c.Checkpoint(t.Context(), s, 0, 100); wrote || err != nil {
		t.Fatalf("checkpoint behind the live log wrote=%v err=%v", wrote, err)
	}
	if wrote, err := c.Checkpoint(t.Context(), s, 1, 100); !wrote || err != nil {
		t.Fatalf("checkpoint wrote=%v err=%v", wrote, err)
	}
	vals, err := c.Get(s.Header(), 100)
	if err != nil || string(vals["title"]) != `"hello"` || string(vals["subagentTiming"]) != `{"settledMs":0}` {
		t.Fatalf("get %v, %v", vals, err)
	}
	info, err := os.Stat(filepath.Join(dir, "projections", "s1.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("row file %v, %v", info, err)
	}
	if dinfo, _ := os.Stat(filepath.Join(dir, "projections")); dinfo.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", dinfo.Mode())
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "projections"))
	if len(entries) != 1 {
		t.Fatalf("leftover files: %v", entries)
	}
}

func TestGetTreatsEveryInvalidRowAsMiss(t *testing.T) {
	c, _, st, dir := setup(t)
	s := titled(t, st, "s1", "hello")
	if _, err := c.Checkpoint(t.Context(), s, 1, 100); err != nil {
		t.Fatal(err)
	}
	h := s.Header()
	other := h
	other.CreatedAt++
	renamed := h
	renamed.ID = "s2"
	for name, tc := range map[string]struct {
		h    session.Header
		size int64
	}{
		"size changed":         {h, 101},
		"another lifecycle":    {other, 100},
		"another id, no row":   {renamed, 100},
		"hostile id":           {session.Header{ID: "../s1", CreatedAt: h.CreatedAt}, 100},
		"negative size stored": {h, -1},
	} {
		if vals, err := c.Get(tc.h, tc.size); vals != nil || err != nil {
			t.Errorf("%s: got %v, %v; want a miss", name, vals, err)
		}
	}
	// A row for another id copied under this id's name is refused.
	row, _ := os.ReadFile(filepath.Join(dir, "projections", "s1.json"))
	os.WriteFile(filepath.Join(dir, "projections", "s2.json"), row, 0o600)
	if vals, _ := c.Get(renamed, 100); vals != nil {
		t.Errorf("foreign row served: %v", vals)
	}
	// Garbage rows and a row whose only unit has another stateVersion.
	for _, garbage := range []string{"", "{", "null", `{"id":"s1"}`, `[1,2]`, `{"id":"s1","createdAt":` + jsonInt(h.CreatedAt) + `,"size":100,"asOfSeq":0,"units":{"title":{"stateVersion":99,"value":"x"}}}`} {
		os.WriteFile(filepath.Join(dir, "projections", "s1.json"), []byte(garbage), 0o600)
		if vals, err := c.Get(h, 100); vals != nil || err != nil {
			t.Errorf("garbage %q: got %v, %v", garbage, vals, err)
		}
	}
}

func TestStateVersionChangeInvalidatesOnlyThatUnit(t *testing.T) {
	c, reg, st, _ := setup(t)
	s := titled(t, st, "s1", "hello")
	un, err := reg.Register(projection.Fold[int]{Name: "extra", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Checkpoint(t.Context(), s, 1, 100); err != nil {
		t.Fatal(err)
	}
	un()
	if _, err := reg.Register(projection.Fold[int]{Name: "extra", Version: 2}); err != nil {
		t.Fatal(err)
	}
	vals, _ := c.Get(s.Header(), 100)
	if _, ok := vals["extra"]; ok || string(vals["title"]) != `"hello"` {
		t.Fatalf("values %v", vals)
	}
	if err := c.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	if vals, _ := c.Get(s.Header(), 100); vals != nil {
		t.Fatalf("removed row served %v", vals)
	}
	if err := c.Remove("s1"); err != nil {
		t.Fatal(err)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }
