package persistence

import (
	"bytes"
	"errors"
	"testing"
)

// TestRepair: a bad line in the middle is dropped when what follows still
// continues the log, else the log is cut at it; either way the whole
// original is kept in a .broken backup and the valid part is intact.
func TestRepair(t *testing.T) {
	tests := []struct {
		name     string
		damage   func(lines [][]byte) [][]byte
		wantDrop bool
		keep     func(lines [][]byte) [][]byte // the repaired file's lines
	}{
		{"garbage line inserted", func(l [][]byte) [][]byte {
			return append(append(append([][]byte{}, l[:3]...), []byte("{garbage}")), l[3:]...)
		}, true, func(l [][]byte) [][]byte { return l }},
		{"event overwritten", func(l [][]byte) [][]byte {
			out := append([][]byte{}, l...)
			out[3] = []byte(`{"type":"nope"`)
			return out
		}, false, func(l [][]byte) [][]byte { return l[:3] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, _ := writeSession(t, dir, "s1", nil)
			orig := readBytes(t, path)
			lines := bytes.Split(bytes.TrimSuffix(orig, []byte("\n")), []byte("\n"))
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
			if plan.Line != 4 || plan.Drop != tt.wantDrop {
				t.Fatalf("plan = %+v, want line 4, drop %v", plan, tt.wantDrop)
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
			want := append(bytes.Join(tt.keep(lines), []byte("\n")), '\n')
			if got := readBytes(t, path); !bytes.Equal(got, want) {
				t.Errorf("repaired log\n%s\nwant\n%s", got, want)
			}
			snap, err := ps.Inspect(t.Context(), "s1")
			if err != nil || len(snap.Events)-snap.Synthetic != plan.Kept {
				t.Errorf("Inspect after repair: %d events (%d synthetic), %v; plan kept %d", len(snap.Events), snap.Synthetic, err, plan.Kept)
			}
			if _, err := ps.PlanRepair(t.Context(), "s1"); !errors.Is(err, ErrNothingToRepair) {
				t.Errorf("PlanRepair after repair: %v, want ErrNothingToRepair", err)
			}
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
