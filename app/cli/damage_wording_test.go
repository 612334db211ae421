package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/transcript"
)

// TestDamageWordedTheSameEverywhere: each kind of damage of a child's log
// (real JSONL, damaged on disk) reads the same in every command that
// reports it: the sessions table (cut to its PROBLEM cell, without the
// data directory), sessions show, sessions repair, agents (both scopes)
// and the subagents extension's row (a diagnostic's detail, or a repaired
// child's damage).
func TestDamageWordedTheSameEverywhere(t *testing.T) {
	good := session.Header{ID: "kid", CreatedAt: 2, Cwd: "/w", ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1}
	lines := func(f func(l [][]byte) [][]byte) func(t *testing.T, dir, path string) {
		return func(t *testing.T, dir, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, bytes.Join(f(bytes.Split(data, []byte("\n"))), []byte("\n")), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	badLine := lines(func(l [][]byte) [][]byte { l[2] = []byte(`{"type":`); return l })
	tests := []struct {
		name   string
		damage func(t *testing.T, dir, path string)
		// want is the wording, PATH standing for the log's path.
		want string
		// listed: the sessions table shows it; row: agents and the
		// extension give the child a diagnostic row with it; marked: the
		// child's row (a child still) carries it.
		listed, row, marked bool
	}{
		{"bad line", badLine, "corrupt at line 3 of PATH: unexpected end of JSON input", true, true, false},
		{"seq gap", lines(func(l [][]byte) [][]byte { return append(l[:2:2], l[3:]...) }),
			"events missing at line 3 of PATH: it holds seq 2 where seq 1 was expected", true, true, false},
		{"header mismatch", lines(func(l [][]byte) [][]byte {
			l[0] = bytes.Replace(l[0], []byte(`"kid"`), []byte(`"other"`), 1)
			return l
		}), `bad header: session header id "other" does not match session id "kid"`, true, true, false},
		{"repaired", func(t *testing.T, dir, path string) {
			// The turn's start: the descriptor after it keeps kid a child.
			lines(func(l [][]byte) [][]byte { l[1] = []byte(`{"type":`); return l })(t, dir, path)
			if code, out, errOut := runCLI(t, dir, "sessions", "repair", "--yes", "kid"); code != ExitOK {
				t.Fatalf("repair: exit %d: %s%s", code, out, errOut)
			}
		}, "repaired: line 2 of PATH dropped (the original is kept in PATH.broken)", true, false, true},
		{"torn tail", lines(func(l [][]byte) [][]byte { l[len(l)-2] = l[len(l)-2][:10]; return l[:len(l)-1] }),
			"torn last line 4 of PATH: a write cut short by a crash; the next load drops it, keeping a backup", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			seedDelegated(t, dir, good)
			sdir := filepath.Join(dir, "sessions")
			path := filepath.Join(sdir, "kid.jsonl")
			tt.damage(t, dir, path)
			want := strings.ReplaceAll(tt.want, "PATH", path)

			_, out, _ := runCLI(t, dir, "sessions")
			// The PROBLEM cell starts under its heading (the cells before
			// it are ASCII).
			cell, at := "", -1
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "ID ") {
					at = strings.Index(line, "PROBLEM")
				}
				if strings.HasPrefix(line, "kid ") && at > 0 && len(line) > at {
					cell = line[at:]
				}
			}
			wantCell := ""
			if tt.listed {
				wantCell = transcript.OneLine(strings.ReplaceAll(want, sdir+string(filepath.Separator), ""), problemWidth)
			}
			if cell != wantCell {
				t.Errorf("sessions: kid's PROBLEM = %q, want %q\n%s", cell, wantCell, out)
			}
			for _, args := range [][]string{{"sessions", "show", "kid"}, {"sessions", "repair", "kid"}} {
				_, out, errOut := runCLI(t, dir, args...)
				if !strings.Contains(out+errOut, want) {
					t.Errorf("%v does not say %q:\n%s%s", args, want, out, errOut)
				}
			}
			for _, args := range [][]string{{"agents", "parent"}, {"agents", "--descendants", "parent"}} {
				_, out, _ = runCLI(t, dir, args...)
				if got := strings.Contains(out, "kid [diagnostic: unavailable: "+want+"]"); got != tt.row {
					t.Errorf("%v: the diagnostic says %q: %v, want %v\n%s", args, want, got, tt.row, out)
				}
				if got := strings.Contains(out, "kid [continuable, inactive] — review — "+want+"\n"); got != tt.marked {
					t.Errorf("%v: the child row says %q: %v, want %v\n%s", args, want, got, tt.marked, out)
				}
			}
			a := newTestApp(t, dir, "model:\n  main:\n    - text: hi\n")
			defer a.Close()
			res, err := a.Extensions["_acp-agent/subagents/list"](t.Context(), json.RawMessage(`{"sessionId":"parent"}`))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res)
			detail, _ := json.Marshal(want)
			if got := strings.Contains(string(b), `"detail":`+string(detail)); got != tt.row {
				t.Errorf("extension: the diagnostic says %q: %v, want %v\n%s", want, got, tt.row, b)
			}
			if got := strings.Contains(string(b), `"hasChildren":false,"damage":`+string(detail)); got != tt.marked {
				t.Errorf("extension: the child row says %q: %v, want %v\n%s", want, got, tt.marked, b)
			}
		})
	}
}

// TestRepairedChildWithoutDescriptorSaysWhy: a repair that dropped a
// child's descriptor leaves it without identity, a corrupt row; the row
// says what the repair dropped, in the one wording.
func TestRepairedChildWithoutDescriptorSaysWhy(t *testing.T) {
	dir := t.TempDir()
	seedDelegated(t, dir, session.Header{ID: "kid", CreatedAt: 2, Cwd: "/w", ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1})
	path := filepath.Join(dir, "sessions", "kid.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := bytes.Split(data, []byte("\n"))
	l[2] = []byte(`{"type":`) // the descriptor
	if err := os.WriteFile(path, bytes.Join(l, []byte("\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, dir, "sessions", "repair", "--yes", "kid"); code != ExitOK {
		t.Fatalf("repair: exit %d: %s%s", code, out, errOut)
	}
	want := "parent\n  └─ kid [diagnostic: corrupt: repaired: line 3 of " + path + " dropped (the original is kept in " + path + ".broken)]\n"
	if code, out, errOut := runCLI(t, dir, "agents", "parent"); code != ExitOK || out != want {
		t.Errorf("agents: exit %d (%s)\n%s\nwant\n%s", code, errOut, out, want)
	}
}
