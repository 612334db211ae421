package persistence

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestDamageOfRealLogs: each kind of damage done to a real log on disk is
// classified by DamageOf from what the store reports (Inspect's error, a
// listing's Unreadable row, Inspect's torn flag, a repair's summary) and
// worded by Text in the one wording, with Repairable only where
// `sessions repair` helps.
func TestDamageOfRealLogs(t *testing.T) {
	// lines edits the log's lines (the last element is the empty string
	// after the final newline).
	lines := func(f func(l [][]byte) [][]byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, bytes.Join(f(bytes.Split(data, []byte("\n"))), []byte("\n")), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name       string
		damage     func(t *testing.T, path string)
		kind       DamageKind
		text       string // PATH stands for the log's path
		repairable bool
	}{
		{"bad line", lines(func(l [][]byte) [][]byte { l[3] = []byte(`{"type":`); return l }),
			DamageBadLine, "corrupt at line 4 of PATH: unexpected end of JSON input", true},
		{"seq gap", lines(func(l [][]byte) [][]byte { return append(l[:3:3], l[5:]...) }),
			DamageSeqGap, "events missing at line 4 of PATH: it holds seq 4 where seq 2 was expected", true},
		{"repeated seq", lines(func(l [][]byte) [][]byte { return append(l[:4:4], l[3:]...) }),
			DamageSeqGap, "seq out of order at line 5 of PATH: it holds seq 2 where seq 3 was expected", true},
		{"header mismatch", lines(func(l [][]byte) [][]byte {
			l[0] = bytes.Replace(l[0], []byte(`"s1"`), []byte(`"other"`), 1)
			return l
		}), DamageBadHeader, `bad header: session header id "other" does not match session id "s1"`, false},
		{"fifo", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, DamageUnreadable, ProblemNamedPipe, false},
		{"torn tail", lines(func(l [][]byte) [][]byte { l[len(l)-2] = l[len(l)-2][:7]; return l[:len(l)-1] }),
			DamageTornTail, "torn last line 14 of PATH: a write cut short by a crash; the next load drops it, keeping a backup", false},
		{"repaired", lines(func(l [][]byte) [][]byte { l[3] = []byte(`{"type":`); l[5] = []byte("not json"); return l }),
			DamageRepaired, "repaired: lines 4, 6 of PATH dropped (the original is kept in PATH.broken)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ps := openStore(t, dir)
			st := liveStore(t, ps)
			s, err := st.Create(session.Header{ID: "s1", Cwd: "/w"}, session.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			appendToolTurn(t, s, 1)
			if err := st.Remove("s1"); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "sessions", "s1.jsonl")
			tt.damage(t, path)

			var d Damage
			snap, err := ps.Inspect(t.Context(), "s1")
			switch tt.kind {
			case DamageUnreadable, DamageBadHeader:
				// What a listing reports for a file without a usable header.
				u, bad := ps.Check(t.Context(), "s1")
				if !bad {
					t.Fatal("Check: the header reads fine")
				}
				d = UnreadableDamage(u)
				if ed, ok := DamageOf(err); !ok || ed.Text() != d.Text() {
					t.Errorf("Inspect's error words it %q, the listing %q", ed.Text(), d.Text())
				}
			case DamageTornTail:
				if err != nil || !snap.Torn {
					t.Fatalf("Inspect = torn %v, %v", snap.Torn, err)
				}
				d = TornDamage("s1", path, len(snap.Events)-snap.Synthetic+2)
			case DamageRepaired:
				plan, err := ps.PlanRepair(t.Context(), "s1")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ps.Repair(t.Context(), "s1", plan); err != nil {
					t.Fatal(err)
				}
				snap, err := ps.Inspect(t.Context(), "s1")
				sum, ok := session.Repaired(snap.Events)
				if err != nil || !ok {
					t.Fatalf("Inspect after the repair = repaired %v, %v", ok, err)
				}
				d = RepairedDamage("s1", path, sum)
			default:
				var ok bool
				if d, ok = DamageOf(err); !ok {
					t.Fatalf("DamageOf(%v) = not damage", err)
				}
			}
			if d.Kind != tt.kind {
				t.Errorf("kind = %s, want %s", d.Kind, tt.kind)
			}
			if want := strings.ReplaceAll(tt.text, "PATH", path); d.Text() != want {
				t.Errorf("text = %q\nwant   %q", d.Text(), want)
			}
			if d.Repairable() != tt.repairable {
				t.Errorf("repairable = %v, want %v", d.Repairable(), tt.repairable)
			}
			if strings.Contains(d.Text(), "persistence:") {
				t.Errorf("text has a package prefix: %q", d.Text())
			}
		})
	}
}
