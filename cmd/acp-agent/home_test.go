package main

import (
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

// An editor may start the agent with no $HOME (avante.nvim does, set up
// as docs/editors.md says): the agent still serves, its home being the
// user database's.
func TestBinaryStartsWithHOMEUnset(t *testing.T) {
	if u, err := user.Current(); err != nil || u.HomeDir == "" {
		t.Skipf("no user database entry here: %v", err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("model:\n  main:\n    - text: \"Hello without a home.\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Unset for the child (it inherits os.Environ()); t.Setenv restores
	// it. The data directory still goes to a temporary place.
	t.Setenv("HOME", "")
	os.Unsetenv("HOME")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	p := startProc(t, "--model", "script:"+script)
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &map[string]any{})
	var created struct {
		SessionID string `json:"sessionId"`
	}
	p.call(t, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}, &created)
	var res struct {
		StopReason string `json:"stopReason"`
	}
	p.call(t, "session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}, &res)
	if res.StopReason != "end_turn" {
		t.Errorf("stopReason = %q", res.StopReason)
	}
	if code, verdict := p.finish(t); code != 0 || verdict != nil {
		t.Errorf("exit %d, %v\nstderr:\n%s", code, verdict, p.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "acp-agent", "sessions", created.SessionID+".jsonl")); err != nil {
		t.Errorf("session not written under XDG_STATE_HOME: %v", err)
	}
}
