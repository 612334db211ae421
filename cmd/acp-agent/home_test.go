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
	// The data directory goes to a temporary place either way (the user
	// database's home is the real one): through XDG_STATE_HOME, or, with
	// every home variable unset, through ACP_AGENT_DATA_DIR, so that only
	// the configuration directory falls back to the user database's home.
	for _, tc := range []struct {
		name    string
		dataEnv string // the variable naming the data directory's parent or itself
		sub     string // where the data directory is under dir
	}{
		{"XDG_STATE_HOME set", "XDG_STATE_HOME", filepath.Join("state", "acp-agent")},
		{"XDG variables unset too", "ACP_AGENT_DATA_DIR", "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "script.yaml")
			if err := os.WriteFile(script, []byte("model:\n  main:\n    - text: \"Hello without a home.\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// Unset for the child (it inherits os.Environ()); t.Setenv
			// restores them.
			for _, v := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "ACP_AGENT_DATA_DIR"} {
				t.Setenv(v, "")
				os.Unsetenv(v)
			}
			value := filepath.Join(dir, "state")
			if tc.dataEnv == "ACP_AGENT_DATA_DIR" {
				value = filepath.Join(dir, "data")
			}
			t.Setenv(tc.dataEnv, value)
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
			if _, err := os.Stat(filepath.Join(dir, tc.sub, "sessions", created.SessionID+".jsonl")); err != nil {
				t.Errorf("session not written under %s: %v", tc.dataEnv, err)
			}
		})
	}
}
