package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/internal/proctest"
)

// The binary is SIGKILLed while a command's `sleep 30` runs (with a
// setsid escapee beside it): nothing of the command's group, nor the
// escapee, is left.
func TestKilledBinaryLeavesNoCommandProcesses(t *testing.T) {
	dir := t.TempDir()
	data, cwd := filepath.Join(dir, "data"), filepath.Join(dir, "cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	command := "setsid sleep 60 & echo $! > esc; echo $$ > pg.tmp; mv pg.tmp pg; sleep 30; true"
	args, _ := json.Marshal(map[string]string{"command": command})
	script := filepath.Join(dir, "script.yaml")
	yaml := fmt.Sprintf("model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '%s'\n    - text: done\n", args)
	if err := os.WriteFile(script, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "--data-dir", data, "--model", "script:"+script)
	p.answerPermissions("allow-once")
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	p.call(t, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &created)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var res map[string]any
		_ = p.conn.Call(ctx, "session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, &res)
	}()
	pgid, esc := waitPID(t, filepath.Join(cwd, "pg"), p), waitPID(t, filepath.Join(cwd, "esc"), p)
	if live, _ := proctest.LiveGroupMembers(pgid); len(live) == 0 {
		t.Fatal("the command's group is not running")
	}
	killed := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	var left []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left, _ = proctest.LiveGroupMembers(pgid)
		if !proctest.Gone(esc) {
			left = append(left, esc)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes %v outlived the killed binary", left)
	}
	t.Logf("the command's group and its setsid escapee were gone %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// waitPID waits (bounded) for a command to write its pid file.
func waitPID(t *testing.T, path string, p *proc) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("%s never written\nstderr:\n%s", path, p.stderr)
	return 0
}
