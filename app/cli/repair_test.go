package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsRepair: `sessions repair ID` says what is bad and what it
// will do, changes nothing unless the person agrees (or --yes), then keeps
// the whole file in a .broken backup and leaves a log that loads, with
// its valid part intact.
func TestSessionsRepair(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		stdin    string
		repaired bool
	}{
		{"declined", []string{"sessions", "repair", "broken"}, "n\n", false},
		{"no answer", []string{"sessions", "repair", "broken"}, "", false},
		{"agreed", []string{"sessions", "repair", "broken"}, "y\n", true},
		{"--yes", []string{"sessions", "repair", "--yes", "broken"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sdir := filepath.Join(dir, "sessions")
			if err := os.MkdirAll(sdir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := writeCorrupt(t, sdir, "broken")
			before, _ := os.ReadFile(path)
			var out, errOut bytes.Buffer
			code := Main(context.Background(), append([]string{"--data-dir", dir}, tt.args...), strings.NewReader(tt.stdin), &out, &errOut, noEnv)
			// A declined repair exits 1: the log is still damaged.
			if want := map[bool]int{true: ExitOK, false: ExitError}[tt.repaired]; code != want {
				t.Fatalf("exit %d, want %d: %s", code, want, errOut.String())
			}
			if tt.repaired && errOut.Len() != 0 {
				t.Errorf("a completed repair wrote to stderr (a log line on top of its sentence?):\n%s", errOut.String())
			}
			head := "session broken: corrupt at line 2 of " + path + ": "
			if !strings.HasPrefix(out.String(), head) || !strings.Contains(out.String(), "repair will drop 1 bad line(s) (2) and keep all 1 valid events; the whole file is backed up first\n") {
				t.Errorf("output:\n%s", out.String())
			}
			after, _ := os.ReadFile(path)
			backup, berr := os.ReadFile(path + ".broken")
			if !tt.repaired {
				if !bytes.Equal(after, before) || berr == nil || !strings.Contains(errOut.String(), "not repaired: the repair was declined") {
					t.Errorf("declined repair changed something (backup err %v):\n%s", berr, out.String())
				}
				return
			}
			if berr != nil || !bytes.Equal(backup, before) {
				t.Errorf("backup: %v, holds the original: %v", berr, bytes.Equal(backup, before))
			}
			if !strings.HasSuffix(out.String(), "repaired session broken; the original is kept in "+path+".broken\n") {
				t.Errorf("output:\n%s", out.String())
			}
			if bytes.Contains(after, []byte("not json")) || !bytes.Contains(after, []byte(`"turn/start"`)) {
				t.Errorf("repaired log:\n%s", after)
			}
			if code, show, e := runCLI(t, dir, "sessions", "show", "broken"); code != ExitOK || !strings.Contains(show, "session broken") {
				t.Errorf("show after repair: exit %d %s\n%s", code, e, show)
			}
		})
	}
}
