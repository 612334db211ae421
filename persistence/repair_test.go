package persistence

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// longSession writes a session of 20 tool turns (261 events) and returns
// its path, its lines (header first) and its events.
func longSession(t *testing.T, dir string) (string, [][]byte, []session.Event) {
	t.Helper()
	path, events := writeSession(t, dir, "s1", func(s *session.Session) {
		for turn := 2; turn <= 20; turn++ {
			appendToolTurn(t, s, turn)
		}
	})
	orig := readBytes(t, path)
	return path, bytes.Split(bytes.TrimSuffix(orig, []byte("\n")), []byte("\n")), events
}

// TestRepairKeepsEveryValidEvent: for each kind of damage, repair drops
// the bad lines on their own and keeps every valid event (exact counts),
// byte for byte at its own seq; missing seqs get fillers and a summary
// lists the dropped lines; the whole damaged file is the backup; the
// repaired log reads, loads, and needs no second repair.
func TestRepairKeepsEveryValidEvent(t *testing.T) {
	tests := []struct {
		name                   string
		damage                 func(l [][]byte) [][]byte
		lost                   []int64 // seqs of the valid events the damage itself destroyed
		dropped, fillers, line int
	}{
		{"garbage line inserted", func(l [][]byte) [][]byte {
			return slices.Insert(slices.Clone(l), 40, []byte("{garbage}"))
		}, nil, 1, 0, 41},
		{"line damaged in place", func(l [][]byte) [][]byte {
			out := slices.Clone(l)
			out[40] = bytes.Repeat([]byte("x"), len(l[40])) // the event with seq 39
			return out
		}, []int64{39}, 1, 1, 41},
		{"sequence gap", func(l [][]byte) [][]byte {
			return slices.Delete(slices.Clone(l), 40, 43) // seqs 39-41 lost
		}, []int64{39, 40, 41}, 0, 3, 41},
		{"two bad lines", func(l [][]byte) [][]byte {
			out := slices.Clone(l)
			out[10] = []byte(`{"type":"nope"`)
			out[200] = []byte(`{"type":"turn/start","seq":"x"}`)
			return out
		}, []int64{9, 199}, 2, 2, 11},
		{"two bad lines around one valid line", func(l [][]byte) [][]byte {
			// The valid line between them is followed by a bad line, not
			// by its successor seq: the dropped line before it explains
			// the seq it skips, so it is kept.
			out := slices.Clone(l)
			out[30] = []byte(`{"type":`)
			out[32] = []byte("not json")
			return out
		}, []int64{29, 31}, 2, 2, 31},
		{"torn lines", func(l [][]byte) [][]byte {
			// Two writes cut short, each run into the next record.
			out := slices.Clone(l)
			out[50] = append(append([]byte{}, l[50][:len(l[50])/2]...), l[51]...)
			out[120] = append(append([]byte{}, l[120][:len(l[120])/3]...), l[121]...)
			out = slices.Delete(out, 121, 122)
			return slices.Delete(out, 51, 52)
		}, []int64{49, 119}, 2, 2, 51},
		{"damaged seq", func(l [][]byte) [][]byte {
			out := slices.Clone(l)
			out[60] = bytes.Replace(l[60], []byte(`"seq":59,`), []byte(`"seq":99959,`), 1)
			return out
		}, []int64{59}, 1, 1, 61},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, lines, events := longSession(t, dir)
			damaged := append(bytes.Join(tt.damage(lines), []byte("\n")), '\n')
			writeBytes(t, path, damaged)
			ps := openStore(t, dir)
			if _, err := ps.Inspect(t.Context(), "s1"); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Inspect of the damaged log: %v, want corrupt", err)
			}
			plan, err := ps.PlanRepair(t.Context(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			wantKept := len(events) - len(tt.lost)
			if plan.Line != tt.line || len(plan.Dropped) != tt.dropped || plan.Fillers != tt.fillers || plan.Kept != wantKept {
				t.Fatalf("plan: first bad line %d, %d dropped, %d fillers, %d kept; want %d, %d, %d, %d (of %d)\n%+v",
					plan.Line, len(plan.Dropped), plan.Fillers, plan.Kept, tt.line, tt.dropped, tt.fillers, wantKept, len(events), plan.Dropped)
			}
			if got := readBytes(t, path); !bytes.Equal(got, damaged) {
				t.Fatalf("PlanRepair changed the log")
			}
			backup, err := ps.Repair(t.Context(), "s1", plan)
			if err != nil {
				t.Fatal(err)
			}
			if backup != path+".broken" || !bytes.Equal(readBytes(t, backup), damaged) {
				t.Errorf("backup %s does not hold the whole damaged file", backup)
			}
			snap, err := ps.Inspect(t.Context(), "s1")
			if err != nil {
				t.Fatalf("Inspect after repair: %v", err)
			}
			kept, fillers := 0, 0
			for _, ev := range snap.Events[:len(snap.Events)-snap.Synthetic] {
				if ev.Type == session.TypeRepaired {
					if d, _ := session.DecodeData[session.RepairedData](ev); d.Filler {
						fillers++
						if !slices.Contains(tt.lost, ev.Seq) {
							t.Errorf("filler at seq %d, a seq whose event was valid", ev.Seq)
						}
					}
					continue
				}
				kept++
				if int(ev.Seq) >= len(events) || !bytes.Equal(eventLines(t, ev), eventLines(t, events[ev.Seq])) {
					t.Errorf("event %d differs from the original", ev.Seq)
				}
			}
			if kept != wantKept || fillers != tt.fillers {
				t.Errorf("repaired log keeps %d events and %d fillers, want %d and %d", kept, fillers, wantKept, tt.fillers)
			}
			sum, ok := session.Repaired(snap.Events)
			if !ok || len(sum.Dropped) != tt.dropped || sum.Backup != backup {
				t.Errorf("repair summary %+v (found %v); want %d dropped lines and the backup", sum, ok, tt.dropped)
			}
			if _, err := ps.PlanRepair(t.Context(), "s1"); !errors.Is(err, ErrNothingToRepair) {
				t.Errorf("PlanRepair after repair: %v, want ErrNothingToRepair", err)
			}
			if _, err := ps.Load(t.Context(), "s1"); err != nil {
				t.Errorf("Load after repair: %v", err)
			}
			ps.Release("s1")
		})
	}
}

// TestRepairRefusesHeldSession: a session held for writing is not
// repaired under its writer.
func TestRepairRefusesHeldSession(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeSession(t, dir, "s1", nil)
	orig := readBytes(t, path)
	lines := bytes.Split(bytes.TrimSuffix(orig, []byte("\n")), []byte("\n"))
	lines = append(append(append([][]byte{}, lines[:3]...), []byte("{garbage}")), lines[3:]...)
	writeBytes(t, path, append(bytes.Join(lines, []byte("\n")), '\n'))
	ps := openStore(t, dir)
	plan, err := ps.PlanRepair(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := openRegular("s1", path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		t.Fatal(err)
	}
	var le *LockedError
	if _, err := ps.Repair(t.Context(), "s1", plan); !errors.As(err, &le) {
		t.Errorf("Repair under another writer: %v, want *LockedError", err)
	}
}
