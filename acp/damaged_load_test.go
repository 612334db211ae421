package acp_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestLoadDamagedSessionShowsValidPart: a session whose log has a bad line
// in the middle loads its valid part read-only over the real connection:
// the replay holds the turns before the damage, a notice says what is
// damaged and how to repair it, prompts are refused, and the file is not
// changed.
func TestLoadDamagedSessionShowsValidPart(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	cwd := tempCwd(t)
	e := start(t, dir, loadScript(t, "model:\n  main:\n    - text: \"FIRST_ANSWER\"\n    - text: \"SECOND_ANSWER\"\n"))
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	for _, text := range []string{"first question", "second question"} {
		if r, err := e.prompt(ctx, id, text); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
			t.Fatalf("prompt = %v, %v", r, err)
		}
	}
	e.stop()
	path := filepath.Join(dir, "sessions", id+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Damage the line of the second user message: everything before it
	// (the first turn and the second's start) is the valid part.
	lines := bytes.Split(data, []byte("\n"))
	bad := -1
	for i, l := range lines {
		if bytes.Contains(l, []byte("second question")) && bytes.Contains(l, []byte(`"user/message"`)) {
			bad = i
		}
	}
	if bad < 0 {
		t.Fatal("no second user message in the log")
	}
	lines[bad] = []byte(`{"type":"user/message","seq":`)
	damaged := bytes.Join(lines, []byte("\n"))
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}

	e2 := start(t, dir, loadScript(t, "model:\n  main:\n    - text: \"NEVER\"\n"))
	e2.initialize(ctx)
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("load of a damaged session: %v", err)
	}
	shown := strings.Join(transcript(e2.rec.snapshot(id)), "\n")
	for _, want := range []string{"first question", "FIRST_ANSWER", "damaged", "line " + strconv.Itoa(bad+1), "acp-agent sessions repair " + id} {
		if !strings.Contains(shown, want) {
			t.Errorf("replay lacks %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "SECOND_ANSWER") {
		t.Errorf("replay shows what follows the damage:\n%s", shown)
	}
	if _, err := e2.prompt(ctx, id, "more"); err == nil {
		t.Errorf("a prompt on the damaged session was accepted")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
		t.Errorf("loading changed the damaged log")
	}
}
