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

	"golang.org/x/sys/unix"

	"github.com/acp-agent/acp-agent/internal/proctest"
)

// The binary is SIGKILLed while a command's `sleep 30` runs (with setsid
// escapees beside it, one without the marker: `setsid env -i`): nothing
// of the command's group, nor the escapees, is left.
func TestKilledBinaryLeavesNoCommandProcesses(t *testing.T) {
	dir := t.TempDir()
	data, cwd := filepath.Join(dir, "data"), filepath.Join(dir, "cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	command := "setsid sleep 60 & echo $! > esc; setsid env -i sleep 1000 & echo $! > bare; echo $$ > pg.tmp; mv pg.tmp pg; sleep 30; true"
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
	shell, esc, bare := waitPID(t, filepath.Join(cwd, "pg"), p), waitPID(t, filepath.Join(cwd, "esc"), p), waitPID(t, filepath.Join(cwd, "bare"), p)
	pgid, ok := proctest.GroupOf(shell)
	if !ok {
		t.Fatal("the command's shell is not running")
	}
	if live, _ := proctest.LiveGroupMembers(pgid); len(live) == 0 {
		t.Fatal("the command's group is not running")
	}
	killed := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	var left []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left, _ = proctest.LiveGroupMembers(pgid)
		for _, pid := range []int{esc, bare} {
			if !proctest.Gone(pid) {
				left = append(left, pid)
			}
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
	t.Logf("the command's group and its setsid escapees were gone %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// waitPID waits for a command to write its pid file, as long as the
// test may run.
func waitPID(t *testing.T, path string, p *proc) int {
	t.Helper()
	for ctx := testContext(t); ctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
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

// The binary is SIGKILLed while a command's `sleep 30` runs, and its
// watchdog (the command's reaper) is killed too (nothing of the
// command's own is left to stop it). The next agent to start on the data
// dir kills the sleep at once, and the `env -i sleep 31` beside it in
// the command's group (no marker: the group kill), with no session/load
// of the session that ran it.
func TestKilledAgentsCommandKilledAtNextStart(t *testing.T) {
	dir := t.TempDir()
	data, cwd := filepath.Join(dir, "data"), filepath.Join(dir, "cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	command := `sleep 30 & echo $! > sl.tmp; env -i sleep 31 & echo $! > bare.tmp; mv bare.tmp bare; mv sl.tmp sl; wait; true`
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
	sleepPID, barePID := waitPID(t, filepath.Join(cwd, "sl"), p), waitPID(t, filepath.Join(cwd, "bare"), p)
	t.Cleanup(func() {
		_ = syscall.Kill(sleepPID, syscall.SIGKILL)
		_ = syscall.Kill(barePID, syscall.SIGKILL)
	})

	// The agent is stopped first so that it does not see its command end
	// (its reaper's death), then the reaper dies, then the agent: both
	// die by kill -9 with nothing of theirs run after. Stopping the
	// reaper instead does not hold: when the agent dies, the reaper's
	// process group is orphaned with a stopped member, and the kernel's
	// SIGCONT (with SIGHUP, POSIX job control) wakes the reaper, which
	// sees the agent gone and kills the sleeps itself.
	marker := "ACP_AGENT_COMMAND=" + created.SessionID + "/call-1"
	// The pid files are written by the command's shell, whose parent is
	// its reaper (the agent's reaper server, or the command's own): it
	// runs by now.
	shell, ok := proctest.ParentOf(sleepPID)
	dog, ok2 := proctest.ParentOf(shell)
	if !ok || !ok2 || dog == p.cmd.Process.Pid {
		t.Fatalf("no reaper above the shell of %s while its command runs", marker)
	}
	agentPID := p.cmd.Process.Pid
	_ = syscall.Kill(agentPID, syscall.SIGSTOP)
	// The test is the agent's parent: WUNTRACED reports the stop without
	// reaping it.
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(agentPID, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the agent did not stop: %v (status %v)", err, ws)
	}
	_ = syscall.Kill(dog, syscall.SIGKILL)
	// Waits on the kernel's exit notifications, as long as the test may
	// run: a loaded machine is slow, not wrong.
	if err := waitExit(testContext(t), dog); err != nil {
		t.Fatalf("the watchdog survived SIGKILL: %v", err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	if proctest.Gone(sleepPID) || proctest.Gone(barePID) {
		t.Fatal("the sleeps ended with the agent: nothing is left for the next start to kill")
	}

	p2 := startProc(t, "--data-dir", data, "--model", "script:"+script)
	p2.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	if err := waitExit(testContext(t), sleepPID, barePID); err != nil {
		code, _ := p2.finish(t)
		t.Fatalf("the killed agent's sleeps (marked %v, bare %v) still run after the next agent started (%v; it exited %d)\nstderr:\n%s",
			!proctest.Gone(sleepPID), !proctest.Gone(barePID), err, code, p2.stderr)
	}
	if code, verdict := p2.finish(t); code != 0 || verdict != nil {
		t.Fatalf("exit %d, %v\nstderr:\n%s", code, verdict, p2.stderr)
	}
	if !strings.Contains(p2.stderr.String(), "killed processes left by an agent that died") {
		t.Errorf("the sweep is not reported:\n%s", p2.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "running")); len(entries) != 0 {
		t.Errorf("registry left after the sweep and a clean exit: %v", entries)
	}
}

// testContext ends a little before the test's deadline (go test
// -timeout), so a wait bounded by it fails the test with its message
// instead of the binary panicking.
func testContext(t *testing.T) context.Context {
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-10*time.Second))
		t.Cleanup(cancel)
	}
	return ctx
}

// waitExit waits until every pid has exited, woken by the kernel when
// each does (a pidfd becomes readable when its process exits), until ctx
// ends. A process already gone, or a zombie, counts as exited. Where
// pidfds are missing (Linux before 5.3) it looks every 10ms instead.
func waitExit(ctx context.Context, pids ...int) error {
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == unix.ESRCH {
			continue
		}
		if err != nil {
			for !proctest.Gone(pid) {
				select {
				case <-ctx.Done():
					return fmt.Errorf("pid %d: %w", pid, context.Cause(ctx))
				case <-time.After(10 * time.Millisecond):
				}
			}
			continue
		}
		err = waitPidfd(ctx, fd)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("pid %d: %w", pid, err)
		}
	}
	return nil
}

// waitPidfd waits for fd to become readable (its process exited). The
// poll wakes every 100ms only to notice ctx ending.
func waitPidfd(ctx context.Context, fd int) error {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return err
		case n > 0:
			return nil
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
	}
}
