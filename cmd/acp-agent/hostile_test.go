package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestBinaryWithFIFOInDataDir: a FIFO in place of a session file neither
// hangs session/list nor the subagent listing, and the server still exits
// on stdin EOF.
func TestBinaryWithFIFOInDataDir(t *testing.T) {
	dir := t.TempDir()
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sdir, "trap.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "--data-dir", dir)
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	var list struct {
		Sessions []map[string]any `json:"sessions"`
	}
	p.call(t, "session/list", map[string]any{}, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("session/list = %v, want no sessions", list.Sessions)
	}
	var rows map[string]any
	p.call(t, "_acp-agent/subagents/list", map[string]any{"sessionId": "trap"}, &rows)
	p.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after stdin EOF: %v\nstderr:\n%s", err, p.stderr)
		}
		if v := <-p.lines; v != nil {
			t.Error(v)
		}
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-exited
		t.Fatalf("no exit after stdin EOF\nstderr:\n%s", p.stderr)
	}
}
