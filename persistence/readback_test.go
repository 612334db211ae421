package persistence

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestReadBackMatchesTheLog: the events a held session reads back from
// its file are the events it appended, for every range (across index
// strides, after more appends extended the file, from a created and from
// a loaded session), and nothing not yet written is readable.
func TestReadBackMatchesTheLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ps := openStore(t, dir)
	st := liveStore(t, ps)
	st.SetResidentBytes(1 << 10)
	s, err := st.Create(session.Header{ID: "rb", Cwd: "/work"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *session.Session, want []session.Event) {
		t.Helper()
		if got := ps.Readable(s.ID()); got != int64(len(want)) {
			t.Fatalf("readable %d, want %d", got, len(want))
		}
		n := int64(len(want))
		for _, r := range [][2]int64{{0, n}, {0, 1}, {1, 2}, {63, 65}, {64, 64}, {64, 130}, {n - 1, n}, {n / 2, n}, {n - 40, n - 20}} {
			got, err := ps.ReadEvents(s.ID(), r[0], r[1])
			if err != nil {
				t.Fatalf("ReadEvents(%d, %d): %v", r[0], r[1], err)
			}
			sameEvents(t, got, want[r[0]:r[1]])
		}
		if _, err := ps.ReadEvents(s.ID(), 0, n+1); err == nil {
			t.Fatalf("ReadEvents past the written events succeeded")
		}
		all, err := s.Events()
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, all, want)
	}
	for turn := 1; turn <= 12; turn++ {
		appendToolTurn(t, s, turn)
	}
	if err := ps.Flush(ctx, "rb"); err != nil {
		t.Fatal(err)
	}
	want := s.MustEvents()
	if len(want) < 131 {
		t.Fatalf("only %d events: the ranges below need more", len(want))
	}
	check(s, want)
	for turn := 13; turn <= 20; turn++ { // the index grows with the file
		appendToolTurn(t, s, turn)
	}
	if s.Resident() == 0 {
		t.Fatalf("nothing evicted after %d events", s.Len())
	}
	if err := ps.Flush(ctx, "rb"); err != nil {
		t.Fatal(err)
	}
	want = s.MustEvents()
	check(s, want)

	// Released and loaded again: the loaded session reads back the same.
	if err := st.Remove("rb"); err != nil {
		t.Fatal(err)
	}
	snap, err := ps.Load(ctx, "rb")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := st.Adopt(snap.Header, snap.Events)
	if err != nil {
		t.Fatal(err)
	}
	s2.Evict()
	if s2.Resident() != int64(len(want))-1 {
		t.Fatalf("loaded session resident from %d, want %d", s2.Resident(), len(want)-1)
	}
	check(s2, want)
}

// TestReadBackOfADamagedFileIsCorruption: a line changed on disk under a
// held session is reported as corruption of that line, not returned.
func TestReadBackOfADamagedFileIsCorruption(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ps := openStore(t, dir)
	st := liveStore(t, ps)
	s, err := st.Create(session.Header{ID: "dmg", Cwd: "/work"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appendToolTurn(t, s, 1)
	if err := ps.Flush(ctx, "dmg"); err != nil {
		t.Fatal(err)
	}
	path := ps.Dir() + "/dmg.jsonl"
	data := readBytes(t, path)
	hdr := 0
	for data[hdr] != '\n' {
		hdr++
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("{bad"), int64(hdr+1)); err != nil { // the line of seq 0
		t.Fatal(err)
	}
	f.Close()
	_, err = ps.ReadEvents("dmg", 0, 2)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Line != 2 {
		t.Fatalf("ReadEvents = %v, want corruption at line 2", err)
	}
	if got, err := ps.ReadEvents("dmg", 1, 2); err != nil || len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("ReadEvents(1, 2) = %v, %v: the lines after the damage are intact", got, err)
	}
}

// TestReadBackLongLines: lines longer than the read and scan buffers
// (a 1 MiB tool result) are read back whole, and the index counts them as
// one line each.
func TestReadBackLongLines(t *testing.T) {
	ctx := context.Background()
	ps := openStore(t, t.TempDir())
	st := liveStore(t, ps)
	s, err := st.Create(session.Header{ID: "long", Cwd: "/work"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	for i := range 150 {
		text := "short"
		if i%50 == 7 {
			text = big
		}
		mustAppend(t, s, session.TypeSessionTitle, session.TitleData{Title: text, Source: session.Source{Kind: "fallback"}})
	}
	if err := ps.Flush(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	want := s.MustEvents()
	for _, r := range [][2]int64{{0, 150}, {7, 8}, {57, 58}, {64, 150}, {128, 150}, {107, 108}} {
		got, err := ps.ReadEvents("long", r[0], r[1])
		if err != nil {
			t.Fatalf("ReadEvents(%d, %d): %v", r[0], r[1], err)
		}
		sameEvents(t, got, want[r[0]:r[1]])
	}
}
