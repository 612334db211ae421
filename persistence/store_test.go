package persistence

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// A turn with a tool call and a final text, persisted through the
// write-behind observer, reads back identical from a fresh Store.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		// finish makes the appended events durable in some way.
		finish func(t *testing.T, ps *Store, st *session.Store)
	}{
		{"checkpoint then remove", func(t *testing.T, ps *Store, st *session.Store) {
			if err := ps.Flush(t.Context(), "s1"); err != nil {
				t.Fatal(err)
			}
			if err := st.Remove("s1"); err != nil {
				t.Fatal(err)
			}
		}},
		{"remove flushes", func(t *testing.T, ps *Store, st *session.Store) {
			if err := st.Remove("s1"); err != nil {
				t.Fatal(err)
			}
		}},
		{"close flushes", func(t *testing.T, ps *Store, st *session.Store) {
			if err := ps.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"flush all", func(t *testing.T, ps *Store, st *session.Store) {
			if err := ps.FlushAll(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := ps.Release("s1"); err != nil {
				t.Fatal(err)
			}
		}},
		{"run flushes when stopped", func(t *testing.T, ps *Store, st *session.Store) {
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- ps.Run(ctx) }()
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := ps.Release("s1"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ps := openStore(t, dir)
			st := liveStore(t, ps)
			s, err := st.Create(session.Header{ID: "s1", Cwd: "/work"}, session.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			appendToolTurn(t, s, 1)
			want := s.MustEvents()
			tt.finish(t, ps, st)

			fresh := openStore(t, dir)
			for _, read := range []func(context.Context, string) (Snapshot, error){fresh.Inspect, fresh.Load} {
				snap, err := read(t.Context(), "s1")
				if err != nil {
					t.Fatal(err)
				}
				sameEvents(t, snap.Events, want)
				if snap.Header != s.Header() || snap.Torn || snap.Synthetic != 0 {
					t.Fatalf("snapshot header %+v torn %v synthetic %d; want header %+v, clean", snap.Header, snap.Torn, snap.Synthetic, s.Header())
				}
			}

			continueAndReadBack(t, dir, fresh, "s1")
		})
	}
}

// continueAndReadBack adopts session id from ps, appends one more turn,
// removes it and checks that a fresh Store reads it back whole.
func continueAndReadBack(t *testing.T, dir string, ps *Store, id string) {
	t.Helper()
	st := liveStore(t, ps)
	snap, _ := ps.Inspect(t.Context(), id)
	s, err := st.Adopt(snap.Header, snap.Events)
	if err != nil {
		t.Fatal(err)
	}
	appendToolTurn(t, s, session.LastTurn(snap.Events)+1)
	want := s.MustEvents()
	if err := st.Remove(id); err != nil {
		t.Fatal(err)
	}
	got, err := openStore(t, dir).Inspect(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got.Events, want)
}

// A session created with seed events stores the seed and the end-seed
// marker; creating it again fails.
func TestCreateSeedAndExists(t *testing.T) {
	dir := t.TempDir()
	ps := openStore(t, dir)
	st := liveStore(t, ps)
	src, err := st.Create(session.Header{ID: "parent", Cwd: "/work"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appendToolTurn(t, src, 1)
	child, err := st.Fork("parent", session.ForkOptions{Boundary: -1, ChildID: "child", Header: session.Header{Origin: session.OriginSubagent, DelegationDepth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Flush(t.Context(), "child"); err != nil {
		t.Fatal(err)
	}
	got, err := openStore(t, dir).Inspect(t.Context(), "child")
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got.Events, child.MustEvents())
	if got.Header != child.Header() {
		t.Fatalf("header %+v, want %+v", got.Header, child.Header())
	}

	// The same id from another session store on the same directory.
	other := liveStore(t, openStore(t, dir))
	_, err = other.Create(session.Header{ID: "child"}, session.CreateOptions{})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if _, ok := other.Get("child"); ok {
		t.Fatal("failed create left a live session")
	}
	// And from this store, which holds it.
	if err := ps.Open(session.Header{ID: "child"}, nil, false); !errors.Is(err, ErrExists) {
		t.Fatalf("create of a held session: %v, want ErrExists", err)
	}
	// No temp files are left behind.
	names, _ := filepath.Glob(filepath.Join(dir, "sessions", ".*"))
	if len(names) != 0 {
		t.Fatalf("stray files: %v", names)
	}
}

// Files are 0600 and directories 0700.
func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path, _ := writeSession(t, dir, "s1", nil)
	for p, want := range map[string]fs.FileMode{dir: 0o700, filepath.Dir(path): 0o700, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s has mode %v, want at most %v", p, got, want)
		}
	}
}

// Events appended but not yet flushed are part of Inspect's view in the
// Store that holds the session, and absent from the file until a flush.
func TestInspectHeldIncludesBuffered(t *testing.T) {
	dir := t.TempDir()
	ps := openStore(t, dir)
	st := liveStore(t, ps)
	s, err := st.Create(session.Header{ID: "s1"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appendToolTurn(t, s, 1)
	if err := ps.Flush(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	flushed := s.Len()
	appendOpenToolTurn(t, s, 2, false) // buffered, and an open turn

	got, err := ps.Inspect(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got.Events, s.MustEvents())
	if got.Synthetic != 0 {
		t.Fatalf("live view got %d synthetic closers", got.Synthetic)
	}

	cold, err := openStore(t, dir).Inspect(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if cold.Synthetic != 0 || len(cold.Events) != flushed {
		t.Fatalf("cold view has %d events (%d synthetic), want the %d flushed", len(cold.Events), cold.Synthetic, flushed)
	}
	if err := ps.Flush(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	cold, err = openStore(t, dir).Inspect(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cold.Events) != s.Len()+cold.Synthetic || cold.Synthetic != 3 {
		t.Fatalf("cold view after checkpoint: %d events, %d synthetic; want %d + 3", len(cold.Events), cold.Synthetic, s.Len())
	}
}

// Append needs the write lock, continues the stored seq and validates.
func TestAppend(t *testing.T) {
	dir := t.TempDir()
	_, events := writeSession(t, dir, "s1", nil)
	ps := openStore(t, dir)
	next := int64(len(events))
	ev := func(seq int64, typ, data string) session.Event {
		return session.Event{Type: typ, Seq: seq, Time: 1_700_000_100_000, Data: []byte(data)}
	}
	if err := ps.Append(t.Context(), "s1", []session.Event{ev(next, session.TypeTurnStart, `{"turn":2}`)}); !errors.Is(err, ErrNotOpen) {
		t.Fatalf("append without Load: %v, want ErrNotOpen", err)
	}
	if _, err := ps.Load(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		events []session.Event
		check  func(error) bool
	}{
		{"gap", []session.Event{ev(next+1, session.TypeTurnStart, `{"turn":2}`)}, func(err error) bool {
			var se *SeqError
			return errors.As(err, &se) && se.Want == next && se.Got == next+1
		}},
		{"rewrite", []session.Event{ev(next-1, session.TypeTurnStart, `{"turn":2}`)}, func(err error) bool {
			var se *SeqError
			return errors.As(err, &se)
		}},
		{"inner gap", []session.Event{ev(next, session.TypeTurnStart, `{"turn":2}`), ev(next+2, session.TypeTurnEnd, `{}`)}, func(err error) bool {
			var fe *session.FormatError
			return errors.As(err, &fe)
		}},
		{"unknown type", []session.Event{ev(next, "x/y", `{}`)}, func(err error) bool {
			var ue *session.UnsupportedTypeError
			return errors.As(err, &ue)
		}},
		{"ok", []session.Event{ev(next, session.TypeTurnStart, `{"turn":2}`), ev(next+1, session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"completed"}}`)}, func(err error) bool { return err == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ps.Append(t.Context(), "s1", tt.events); !tt.check(err) {
				t.Fatalf("unexpected result: %v", err)
			}
		})
	}
	if err := ps.Release("s1"); err != nil {
		t.Fatal(err)
	}
	got, err := openStore(t, dir).Inspect(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got.Events, append(events, tests[len(tests)-1].events...))
}

// Two Stores on one directory: the second cannot open a held session for
// writing, by Load or by Adopt, until the first releases it.
func TestLockTwoStores(t *testing.T) {
	dir := t.TempDir()
	a := openStore(t, dir)
	st := liveStore(t, a)
	s, err := st.Create(session.Header{ID: "s1"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appendToolTurn(t, s, 1)
	b := openStore(t, dir)
	var le *LockedError
	if _, err := b.Load(t.Context(), "s1"); !errors.As(err, &le) || le.ID != "s1" {
		t.Fatalf("Load of a held session: %v, want *LockedError", err)
	}
	if !strings.Contains(le.Error(), "s1") {
		t.Fatalf("lock error %q does not name the session", le)
	}
	st2 := liveStore(t, b)
	if _, err := st2.Adopt(s.Header(), s.MustEvents()); !errors.As(err, &le) {
		t.Fatalf("Adopt of a held session: %v, want *LockedError", err)
	}
	// Readers are not blocked.
	if _, err := b.Inspect(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	// The holder may Load its own session: its current view.
	own, err := a.Load(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, own.Events, s.MustEvents())

	if err := st.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	snap, err := b.Load(t.Context(), "s1")
	if err != nil {
		t.Fatalf("Load after release: %v", err)
	}
	sameEvents(t, snap.Events, s.MustEvents())
	if _, err := a.Load(t.Context(), "s1"); !errors.As(err, &le) {
		t.Fatalf("Load by the former holder: %v, want *LockedError", err)
	}
}

// A second process cannot Load a session this process holds.
func TestLockOtherProcess(t *testing.T) {
	dir := t.TempDir()
	writeSession(t, dir, "s1", nil)
	ps := openStore(t, dir)
	if _, err := ps.Load(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	probe := func() int {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, "PERSISTENCE_TEST_LOCK_ID=s1")
		cmd.Stderr = t.Output()
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if code := probe(); code != childLocked {
		t.Fatalf("child exit code %d, want %d (locked)", code, childLocked)
	}
	if err := ps.Release("s1"); err != nil {
		t.Fatal(err)
	}
	if code := probe(); code != childOK {
		t.Fatalf("child exit code %d after release, want %d", code, childOK)
	}
}

// Hostile ids never reach a path: every entry point fails with
// session.ErrInvalidID and nothing is created anywhere.
func TestHostileIDs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	ps := openStore(t, dir)
	st := liveStore(t, ps)
	before := tree(t, root)
	ids := []string{"../x", "a/b", "", ".", "..", strings.Repeat("a", 200), "a\x00b", "../../etc/passwd", `a\b`, ".hidden", "a\nb"}
	ctx := t.Context()
	for _, id := range ids {
		calls := map[string]error{
			"Open":       ps.Open(session.Header{ID: id}, nil, false),
			"OpenRestor": ps.Open(session.Header{ID: id}, nil, true),
			"Append":     ps.Append(ctx, id, []session.Event{{Type: session.TypeTurnStart, Data: []byte(`{}`)}}),
			"Flush":      ps.Flush(ctx, id),
			"Release":    ps.Release(id),
		}
		_, calls["Inspect"] = ps.Inspect(ctx, id)
		_, calls["Load"] = ps.Load(ctx, id)
		if id != "" { // the session store mints an id for ""
			_, err := st.Create(session.Header{ID: id}, session.CreateOptions{})
			calls["Create"] = errOr(err, session.ErrInvalidID)
		}
		for name, err := range calls {
			if !errors.Is(err, session.ErrInvalidID) {
				t.Errorf("%s(%q): %v, want ErrInvalidID", name, id, err)
			}
		}
	}
	if after := tree(t, root); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("files changed:\nbefore %v\nafter  %v", before, after)
	}
}

// errOr maps a header validation failure (the session store validates ids
// itself, as a HeaderError) to want, so the table checks one thing.
func errOr(err, want error) error {
	var he *session.HeaderError
	if errors.As(err, &he) && he.Field == "id" {
		return want
	}
	return err
}

func tree(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestDefaultDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct{ xdg, want string }{
		{"/state", "/state/acp-agent"},
		{"", filepath.Join(home, ".local/state/acp-agent")},
		{"relative/state", filepath.Join(home, ".local/state/acp-agent")},
	}
	for _, tt := range tests {
		t.Setenv("XDG_STATE_HOME", tt.xdg)
		got, err := DefaultDir()
		if err != nil || got != tt.want {
			t.Errorf("XDG_STATE_HOME=%q: DefaultDir() = %q, %v; want %q", tt.xdg, got, err, tt.want)
		}
	}
}

// After Close every method reports ErrClosed and the locks are gone.
func TestClose(t *testing.T) {
	dir := t.TempDir()
	writeSession(t, dir, "s1", nil)
	ps := openStore(t, dir)
	if _, err := ps.Load(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := ps.List(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("List after Close: %v", err)
	}
	if _, err := ps.Load(t.Context(), "s1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Load after Close: %v", err)
	}
	if _, err := openStore(t, dir).Load(t.Context(), "s1"); err != nil {
		t.Fatalf("Load by another store after Close: %v", err)
	}
}
