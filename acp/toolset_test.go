package acp_test

// This file drives the shipped workspace tools (package toolset: read,
// write, edit, bash) over the real ACP connection, once through a client
// that advertises fs and terminal and once through one that does not: the
// files and the command output come out the same. It also checks that a
// command in a client terminal is killed and released on timeout and on
// session/cancel, and that a local command is killed, with its process
// group, on session/cancel.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/internal/proctest"
)

const toolsetScript = `
model:
  main:
    - tool_calls:
        - id: call-write
          name: write
          arguments: '{"path": "src/a.txt", "content": "alpha\nbeta\n"}'
    - tool_calls:
        - id: call-edit
          name: edit
          arguments: '{"path": "src/a.txt", "old_string": "beta", "new_string": "gamma"}'
    - tool_calls:
        - id: call-read
          name: read
          arguments: '{"path": "src/a.txt"}'
    - tool_calls:
        - id: call-bash
          name: bash
          arguments: '{"command": "cat src/a.txt; echo end"}'
    - text: done
`

func TestToolsetSameResultsThroughClientAndLocally(t *testing.T) {
	type outcome struct {
		file, read, bash string
	}
	var got []outcome
	for _, tc := range []struct {
		name         string
		fs, terminal bool
	}{
		{"client fs and terminal", true, true},
		{"local", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			// write and edit: the first asks, allowed always; bash asks.
			c := newWSClient(tc.fs, tc.terminal, "allow-always", "allow-once")
			e := startWS(t, loadScript(t, toolsetScript), c)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if r, err := e.prompt(ctx, id, "go"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %v, %v", r, err)
			}
			if n := len(c.requests()); n != 2 {
				t.Errorf("permission requests = %d, want 2", n)
			}
			data, err := os.ReadFile(filepath.Join(cwd, "src/a.txt"))
			if err != nil {
				t.Fatal(err)
			}
			res := toolResults(e.rec.snapshot(id))
			text := func(call string) string {
				var parts []string
				for _, c := range res[call].Content {
					if c.Content != nil && c.Content.Content.Text != nil {
						parts = append(parts, c.Content.Content.Text.Text)
					}
				}
				return strings.Join(parts, "|")
			}
			for _, call := range []string{"call-write", "call-edit", "call-read", "call-bash"} {
				if res[call] == nil || *res[call].Status != acpsdk.ToolCallStatusCompleted {
					t.Fatalf("%s did not complete: %+v", call, res[call])
				}
			}
			if d := res["call-edit"].Content[0].Diff; d == nil || d.OldText == nil || !strings.Contains(*d.OldText, "beta") || !strings.Contains(d.NewText, "gamma") {
				t.Errorf("edit diff = %+v", d)
			}
			var term bool
			for _, c := range res["call-bash"].Content {
				term = term || c.Terminal != nil
			}
			if term != tc.terminal {
				t.Errorf("terminal embedded = %v", term)
			}
			got = append(got, outcome{string(data), text("call-read"), text("call-bash")})
		})
	}
	if len(got) == 2 && got[0] != got[1] {
		t.Errorf("client and local differ:\n client %q\n local  %q", got[0], got[1])
	}
	if len(got) == 2 && got[0].file != "alpha\ngamma\n" {
		t.Errorf("file = %q", got[0].file)
	}
}

func TestClientTerminalKilledOnTimeout(t *testing.T) {
	ctx := ctxFor(t)
	script := `
model:
  main:
    - tool_calls:
        - id: call-sleep
          name: bash
          arguments: '{"command": "sleep 30", "timeout": 200}'
    - text: done
`
	c := newWSClient(false, true, "allow-once")
	e := startWS(t, loadScript(t, script), c)
	id := e.newSession(ctx, tempCwd(t))
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	res := toolResults(e.rec.snapshot(id))["call-sleep"]
	raw, _ := json.Marshal(res.RawOutput)
	if *res.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(string(raw), `"timedOut":true`) {
		t.Errorf("result = %s %s", *res.Status, raw)
	}
	c.mu.Lock()
	left := len(c.terms)
	c.mu.Unlock()
	if left != 0 {
		t.Errorf("%d terminals not released", left)
	}
}

func TestClientTerminalKilledOnCancel(t *testing.T) {
	ctx := ctxFor(t)
	script := `
model:
  main:
    - tool_calls:
        - id: call-sleep
          name: bash
          arguments: '{"command": "sleep 30"}'
    - text: done
`
	c := newWSClient(false, true, "allow-once")
	e := startWS(t, loadScript(t, script), c)
	id := e.newSession(ctx, tempCwd(t))
	done := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, _ := e.prompt(ctx, id, "go")
		done <- r
	}()
	// Once the terminal is embedded, the command runs.
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		for _, n := range ns {
			if u := n.Update.ToolCallUpdate; u != nil && len(u.Content) > 0 && u.Content[0].Terminal != nil {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("stop reason = %q", r.StopReason)
	}
	c.mu.Lock()
	left := len(c.terms)
	c.mu.Unlock()
	if left != 0 {
		t.Errorf("%d terminals not released after cancel", left)
	}
}

// TestSessionCancelKillsLocalCommand: a client without the terminal
// capability gets commands run locally; session/cancel while one runs
// answers the prompt cancelled, and by then nothing of the command is
// left running: neither its shell nor a background child in its process
// group. (goleak in TestMain checks no goroutine of the run outlives it.)
func TestSessionCancelKillsLocalCommand(t *testing.T) {
	ctx := ctxFor(t)
	script := `
model:
  main:
    - tool_calls:
        - id: call-sleep
          name: bash
          arguments: '{"command": "sleep 1000 & read -r _ _ _ _ pg _ < /proc/$$/stat; echo $pg > cmd.pid; wait"}'
    - text: done
`
	c := newWSClient(false, false, "allow-once")
	e := startWS(t, loadScript(t, script), c)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	done := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, _ := e.prompt(ctx, id, "go")
		done <- r
	}()
	pgid := awaitPID(ctx, t, filepath.Join(cwd, "cmd.pid"))
	if live := liveGroup(t, pgid); len(live) < 2 {
		t.Fatalf("the command's group %d runs %v, want its shell and its sleep", pgid, live)
	}
	if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("stop reason = %q", r.StopReason)
	}
	if live := liveGroup(t, pgid); len(live) > 0 {
		t.Errorf("processes %v of the command's group %d still run after the cancelled prompt was answered", live, pgid)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if res := toolResults(e.rec.snapshot(id))["call-sleep"]; res == nil || *res.Status != acpsdk.ToolCallStatusFailed {
		t.Errorf("the cancelled command's call = %+v, want failed", res)
	}
}

// awaitPID waits until a command wrote its pid (one line) to file.
func awaitPID(ctx context.Context, t *testing.T, file string) int {
	t.Helper()
	for {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			return pid
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the command never wrote %s", file)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// liveGroup lists the live members of process group pgid.
func liveGroup(t *testing.T, pgid int) []int {
	t.Helper()
	live, err := proctest.LiveGroupMembers(pgid)
	if err != nil {
		t.Fatalf("cannot list processes: %v", err)
	}
	return live
}
