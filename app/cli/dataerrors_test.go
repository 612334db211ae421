package cli

import (
	"bytes"
	"context"
	"errors"
	"github.com/acp-agent/acp-agent/app"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/persistence"
)

func runCLI(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), append([]string{"--data-dir", dir}, args...), strings.NewReader(""), &out, &errOut, noEnv)
	return code, out.String(), errOut.String()
}

// TestDataCommandsUnknownSession: an unknown id is "session not found"
// with exit 1 from every data command, whether the data directory exists
// or not, and a missing data directory is never created by reading it.
func TestDataCommandsUnknownSession(t *testing.T) {
	existing := t.TempDir()
	if err := os.MkdirAll(filepath.Join(existing, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "never-made")
	for _, dir := range []string{existing, missing} {
		for _, args := range [][]string{
			{"agents", "nosuch"},
			{"agents", "--descendants", "nosuch"},
			{"sessions", "show", "nosuch"},
		} {
			t.Run(filepath.Base(dir)+"/"+strings.Join(args, " "), func(t *testing.T) {
				code, out, errOut := runCLI(t, dir, args...)
				if code != ExitError || out != "" || errOut != "acp-agent: session not found: nosuch (list the stored sessions with 'acp-agent sessions', or pass --data-dir)\n" {
					t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, \"acp-agent: session not found: nosuch (…)\"", code, out, errOut)
				}
			})
		}
	}
	code, out, errOut := runCLI(t, missing, "sessions")
	if code != ExitOK || out != "ID  TITLE  CREATED  UPDATED  PARENT\n" {
		t.Errorf("sessions on a missing data dir: exit %d, %q %q", code, out, errOut)
	}
	if _, err := os.Lstat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only command created the data directory: %v", err)
	}
}

// writeCorrupt writes session id with a valid header, one bad line in the
// middle, and a valid event after it.
func writeCorrupt(t *testing.T, sdir, id string) string {
	t.Helper()
	line, err := session.MarshalHeaderLine(session.Header{ID: id, CreatedAt: 1_700_000_000_000, Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sdir, id+".jsonl")
	data := append(line, '\n')
	data = append(data, "{this is not json}\n"...)
	data = append(data, `{"type":"turn/start","seq":0,"time":1700000000000,"data":{"turn":1}}`+"\n"...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDataCommandsCorruptSession: a corrupt log's row in `sessions` keeps
// the table narrow: the start of the reason (no package prefix) in a last
// PROBLEM column, cut, the other columns still there, and a line pointing
// to `sessions show` for the whole; `sessions show` fails with the
// SESSION_CORRUPT code, the whole reason with the real path, and suggests
// `sessions repair`.
func TestDataCommandsCorruptSession(t *testing.T) {
	dir := t.TempDir()
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := writeCorrupt(t, sdir, "broken")
	code, out, errOut := runCLI(t, dir, "sessions")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 3 || !strings.HasSuffix(rows[0], "PARENT  PROBLEM") || !strings.Contains(rows[2], "acp-agent sessions show ID") {
		t.Fatalf("rows:\n%s", out)
	}
	row := rows[1]
	if !strings.HasPrefix(row, "broken  (unreadable)") || !strings.Contains(row, "  -       corrupt at line 2 of ") || strings.Contains(row, "persistence:") || len([]rune(row)) > 120 {
		t.Errorf("row %q (%d runes): want the id, (unreadable), the PARENT column, the reason's start, no package prefix, at most 120 runes", row, len([]rune(row)))
	}

	code, out, errOut = runCLI(t, dir, "sessions", "show", "broken")
	if code != ExitError || out != "" || !strings.HasPrefix(errOut, "acp-agent: session broken: corrupt at line 2 of "+path+": ") || strings.Contains(errOut, "persistence:") ||
		!strings.Contains(errOut, "'acp-agent sessions repair broken' repairs it") {
		t.Errorf("show: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: noEnv, Flags: &Flags{DataDir: dir}}
	err := runSessionsShow(context.Background(), env, false, []string{"broken"})
	var de *DataError
	if !errors.As(err, &de) || de.ErrorCode() != "SESSION_CORRUPT" || !errors.Is(err, persistence.ErrCorrupt) {
		t.Errorf("show error = %#v, want a DataError with code SESSION_CORRUPT wrapping the CorruptError", err)
	}
}

// TestSessionsShowRunningElsewhere: a session another store holds for
// writing, with a turn still open, shows that turn "open (running
// elsewhere)", not ended interrupted; once released (the writer gone),
// the same log shows the turn interrupted.
func TestSessionsShowRunningElsewhere(t *testing.T) {
	dir := t.TempDir()
	a, err := app.New(app.Config{DataDir: dir, Testing: &testhooks.Hooks{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Sessions.Create(session.Header{Cwd: "/work/project"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(session.TypeTurnStart, session.TurnData{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	msg := session.Message{ID: "m1", Role: session.RoleUser, Content: []session.Block{session.Text("long job")}, Source: session.Source{Kind: session.SourceUser}}
	if _, err := s.Append(session.TypeUserMessage, msg); err != nil {
		t.Fatal(err)
	}
	if err := a.Persist.Flush(context.Background(), s.ID()); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, dir, "sessions", "show", s.ID())
	if code != ExitOK || !strings.Contains(out, "[turn 1 open (running elsewhere)]") || strings.Contains(out, "interrupted") {
		t.Errorf("held elsewhere: exit %d, stderr %q, transcript:\n%s", code, errOut, out)
	}
	if err := a.Sessions.Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, dir, "sessions", "show", s.ID())
	if code != ExitOK || strings.Contains(out, "running elsewhere") {
		t.Errorf("released: exit %d, transcript:\n%s", code, out)
	}
}
