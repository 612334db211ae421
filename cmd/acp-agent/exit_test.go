package main

// Exit tests: the real process ends, with code 0 and its logs flushed,
// soon after the client closes stdin, whatever it was doing: streaming,
// cancelled, in a tool, with a child running, waiting for the answer to a
// session/request_permission, or running a local command.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/internal/proctest"
)

// exitBound is the longest an exit may take after stdin EOF. It is a
// safety limit, well below the graceful-shutdown timeouts (10 s each), so a
// shutdown that only ends because a timeout fired fails the test.
const exitBound = 5 * time.Second

// stateScripts are the model scripts of the exit states: a model call that
// streams and then hangs; a foreground delegation whose child hangs; a
// background child that hangs while its parent is idle.
const (
	streamingScript = `model:
  main:
    - text: "working on it"
      hang: true
`
	foregroundChildScript = `model:
  main:
    - tool_calls:
        - {id: call_fork, name: subagent_fork, arguments: '{"description": "Hang", "prompt": "Think forever."}'}
  Hang:
    - text: "child working"
      hang: true
`
	backgroundChildScript = `model:
  main:
    - tool_calls:
        - {id: call_bg, name: subagent, arguments: '{"description": "Hang", "prompt": "Think forever."}'}
    - text: STARTED
  Hang:
    - text: "child working"
      hang: true
`
	// The pending-permission scripts: a write and a command the client
	// is asked about and never answers (nothing may be written or run).
	pendingWriteScript = `model:
  main:
    - tool_calls:
        - {id: call_write, name: write, arguments: '{"path": "written.txt", "content": "must not exist"}'}
    - text: WROTE
`
	pendingBashScript = `model:
  main:
    - tool_calls:
        - {id: call_bash, name: bash, arguments: '{"command": "echo ran > ran.txt", "description": "Create ran.txt"}'}
    - text: RAN
`
	// commandScript runs a long local command (the client advertises no
	// terminal) that first records its shell's pid, which leads its
	// process group.
	commandScript = `model:
  main:
    - tool_calls:
        - {id: call_sleep, name: bash, arguments: '{"command": "read -r _ _ _ _ pg _ < /proc/$$/stat; echo $pg > cmd.pid; sleep 60", "description": "Sleep"}'}
    - text: SLEPT
`
)

// TestExitAfterStdinEOFInEveryState brings the agent into one state, closes
// its stdin and requires a graceful exit (code 0, "shut down" logged, no
// shutdown step timed out) within exitBound, with every session log on disk
// closed (each turn/start has its turn/end). The "prompt cancelled" case is
// the one reported in issue 14: a cancel of a prompt whose scripted model
// was still streaming, then stdin closed.
func TestExitAfterStdinEOFInEveryState(t *testing.T) {
	tests := []struct {
		name   string
		script string
		// answer is the test client's answer to permission requests ("":
		// none, the request stays pending).
		answer string
		// reach drives the agent into the state; prompt is the pending
		// prompt's outcome (nil when none is pending).
		reach func(t *testing.T, p *proc, id string) (prompt <-chan promptOutcome)
		// after checks the workspace (the session's cwd) once the
		// process exited; nil when there is nothing to check.
		after func(t *testing.T, cwd string)
	}{
		{"prompt streaming", streamingScript, "", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			out := p.promptAsync(id, "go")
			p.awaitUpdate(t, func(u update) bool { return u.Kind == "agent_message_chunk" && strings.Contains(u.Text(), "working") })
			return out
		}, nil},
		{"prompt cancelled", streamingScript, "", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			out := p.promptAsync(id, "go")
			p.awaitUpdate(t, func(u update) bool { return u.Kind == "agent_message_chunk" && strings.Contains(u.Text(), "working") })
			p.cancel(t, id)
			if o := <-out; o.err != nil || o.StopReason != "cancelled" {
				t.Fatalf("cancelled prompt = %+v", o)
			}
			return nil
		}, nil},
		{"tool running", foregroundChildScript, "", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			out := p.promptAsync(id, "go")
			p.awaitUpdate(t, func(u update) bool { return u.ToolCallID == "call_fork" && u.Meta != nil })
			return out
		}, nil},
		{"tool cancelled", foregroundChildScript, "", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			out := p.promptAsync(id, "go")
			p.awaitUpdate(t, func(u update) bool { return u.ToolCallID == "call_fork" && u.Meta != nil })
			p.cancel(t, id)
			if o := <-out; o.err != nil || o.StopReason != "cancelled" {
				t.Fatalf("cancelled prompt = %+v", o)
			}
			return nil
		}, nil},
		{"child running", backgroundChildScript, "", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			// The child hangs in its model call after the parent's turn ended.
			if o := <-p.promptAsync(id, "go"); o.err != nil || o.StopReason != "end_turn" {
				t.Fatalf("delegating prompt = %+v", o)
			}
			return nil
		}, nil},
		{"permission pending (write)", pendingWriteScript, "", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			out := p.promptAsync(id, "go")
			p.awaitPermissionRequest(t, "call_write")
			return out
		}, func(t *testing.T, cwd string) {
			requireAbsent(t, filepath.Join(cwd, "written.txt"))
			requireCallResult(t, filepath.Join(cwd, "data"), "call_write")
		}},
		{"permission pending (bash)", pendingBashScript, "", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			out := p.promptAsync(id, "go")
			p.awaitPermissionRequest(t, "call_bash")
			return out
		}, func(t *testing.T, cwd string) {
			requireAbsent(t, filepath.Join(cwd, "ran.txt"))
			requireCallResult(t, filepath.Join(cwd, "data"), "call_bash")
		}},
		{"command running", commandScript, "allow-once", func(t *testing.T, p *proc, id string) <-chan promptOutcome {
			out := p.promptAsync(id, "go")
			p.awaitPermissionRequest(t, "call_sleep")
			pgid := awaitPIDFile(t, filepath.Join(p.cwd, "cmd.pid"))
			if len(liveGroup(t, pgid)) == 0 {
				t.Fatalf("the command's process group %d is not seen running", pgid)
			}
			return out
		}, func(t *testing.T, cwd string) {
			pgid := awaitPIDFile(t, filepath.Join(cwd, "cmd.pid"))
			requireCallResult(t, filepath.Join(cwd, "data"), "call_sleep")
			if live := liveGroup(t, pgid); len(live) > 0 {
				t.Errorf("processes %v of the command's group %d still run after the exit", live, pgid)
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, dir, tt.script))
			p.answerPermissions(tt.answer)
			id := p.newSession(t, dir)
			pending := tt.reach(t, p, id)

			p.stdin.Close()
			code := p.waitExit(t, exitBound)
			if code != 0 {
				t.Errorf("exit code = %d, want 0\nstderr:\n%s", code, p.stderr)
			}
			if pending != nil {
				if o := <-pending; o.err != nil || o.StopReason != "cancelled" {
					t.Errorf("prompt pending at EOF = %+v, want cancelled", o)
				}
			}
			p.requireGracefulShutdown(t)
			requireClosedLogs(t, data)
			if tt.after != nil {
				tt.after(t, dir)
			}
		})
	}
}

// TestExitWhenTheClientStopsReading: a client that closes its end of the
// agent's stdout mid-prompt used to get the agent killed by SIGPIPE at its
// next write (no graceful shutdown, logs not flushed). Now the write fails
// with EPIPE and the agent shuts down gracefully and exits 0: here the
// jsonrpc2 client closes stdin when its reader ends, and the write that
// fails is a final update or the prompt's answer during the shutdown.
func TestExitWhenTheClientStopsReading(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, dir, streamingScript))
	id := p.newSession(t, dir)
	out := p.promptAsync(id, "go")
	p.awaitUpdate(t, func(u update) bool { return u.Kind == "agent_message_chunk" && strings.Contains(u.Text(), "working") })
	p.stdout.Close() // jsonrpc2 then closes its stream, stdin included
	<-out
	if code := p.waitExit(t, exitBound); code != 0 {
		t.Errorf("exit code = %d (%v), want 0\nstderr:\n%s", code, p.cmd.ProcessState, p.stderr)
	}
	p.requireGracefulShutdown(t)
	requireClosedLogs(t, data)
}

// TestExitWhenTheClientStopsReadingButKeepsStdinOpen reproduces the client
// of issue 14 (the official TypeScript SDK): its connection close cancels
// the reader of the agent's stdout but never closes the agent's stdin, so
// the agent gets no EOF. While it has nothing to write it cannot tell the
// client is gone (that part is the client's fault: it must end stdin or
// stop the process); its next write (here the answer to one more request)
// fails, and the agent then shuts down gracefully and exits 0.
func TestExitWhenTheClientStopsReadingButKeepsStdinOpen(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cmd := exec.Command(os.Args[0], "--data-dir", data, "--model", "script:"+writeScript(t, dir, streamingScript))
	cmd.Env = append(os.Environ(), beMain+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 0, 1<<20), 16<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// readUntil reads agent lines until one contains want.
	readUntil := func(want string) string {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return lines.Text()
			}
		}
		t.Fatalf("stdout ended before %q (%v)\nstderr:\n%s", want, lines.Err(), stderr.String())
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	readUntil(`"id":1`)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + dir + `","mcpServers":[]}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		}
	}
	if err := json.Unmarshal([]byte(readUntil(`"id":2`)), &created); err != nil {
		t.Fatal(err)
	}
	id := created.Result.SessionID
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"go"}]}}`)
	readUntil("working")
	send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + id + `"}}`)
	readUntil(`"stopReason":"cancelled"`)

	stdout.Close() // what the TypeScript SDK's close does; stdin stays open
	send(`{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}`)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v (%v)\nstderr:\n%s", err, cmd.ProcessState, stderr.String())
		}
	case <-time.After(exitBound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the process had not exited %v after its output failed\nstderr:\n%s", exitBound, stderr.String())
	}
	if logs := stderr.String(); !strings.Contains(logs, "client stopped reading") || !strings.Contains(logs, `msg="shut down"`) {
		t.Errorf("not ended by the failed write, or not gracefully:\n%s", logs)
	}
	requireClosedLogs(t, data)
}

func writeScript(t testing.TB, dir, script string) string {
	t.Helper()
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *proc) newSession(t testing.TB, cwd string) string {
	t.Helper()
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	p.call(t, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &created)
	p.cwd = cwd
	return created.SessionID
}

// awaitPermissionRequest waits until the client was asked about callID.
func (p *proc) awaitPermissionRequest(t *testing.T, callID string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		p.mu.Lock()
		asked := slices.Clone(p.asked)
		p.mu.Unlock()
		for _, raw := range asked {
			var r struct {
				ToolCall struct {
					ToolCallID string `json:"toolCallId"`
				} `json:"toolCall"`
			}
			if json.Unmarshal(raw, &r) == nil && r.ToolCall.ToolCallID == callID {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session/request_permission for %s\nstderr:\n%s", callID, p.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitPIDFile waits until a command wrote its pid (one line) to file.
func awaitPIDFile(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never wrote %s", file)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requireCallResult requires the session log in data to hold a tool/call
// for callID closed by its tool/result (a pending call is closed by the
// shutdown, never left open), and that result to be an abort or a
// cancellation: the shutdown is no user's rejection.
func requireCallResult(t *testing.T, data, callID string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(data, "sessions", "*.jsonl"))
	var called, closed bool
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(raw)) {
			var ev struct {
				Type string
				Data struct {
					CallID  string `json:"callId"`
					Message struct {
						Source struct {
							CallID string `json:"callId"`
						}
					}
					Error struct{ Code string }
				}
			}
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			switch {
			case ev.Type == "tool/call" && ev.Data.CallID == callID:
				called = true
			case ev.Type == "tool/result" && ev.Data.Message.Source.CallID == callID:
				closed = called
				if c := ev.Data.Error.Code; c != "ABORTED" && c != "PERMISSION_CANCELLED" {
					t.Errorf("%s closed with code %q, want ABORTED or PERMISSION_CANCELLED: %s", callID, c, strings.TrimSpace(line))
				}
			}
		}
	}
	if !called || !closed {
		t.Errorf("%s in the log: called %v, closed by a result after the call %v", callID, called, closed)
	}
}

func requireAbsent(t *testing.T, file string) {
	t.Helper()
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): a call the user never allowed took effect", filepath.Base(file), err)
	}
}

type promptOutcome struct {
	StopReason string `json:"stopReason"`
	err        error
}

// promptAsync sends session/prompt and delivers its outcome later.
func (p *proc) promptAsync(id, text string) <-chan promptOutcome {
	out := make(chan promptOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var o promptOutcome
		o.err = p.conn.Call(ctx, "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": text}}}, &o)
		out <- o
	}()
	return out
}

func (p *proc) cancel(t *testing.T, id string) {
	t.Helper()
	if err := p.conn.Notify(context.Background(), "session/cancel", map[string]any{"sessionId": id}); err != nil {
		t.Fatal(err)
	}
}

// update is the part of a session/update the tests look at.
type update struct {
	Kind       string          `json:"sessionUpdate"`
	ToolCallID string          `json:"toolCallId"`
	Content    json.RawMessage `json:"content"`
	Meta       map[string]any  `json:"_meta"`
}

// Text returns a message chunk's text.
func (u update) Text() string {
	var c struct{ Text string }
	_ = json.Unmarshal(u.Content, &c)
	return c.Text
}

// awaitUpdate waits until a received session/update satisfies ok.
func (p *proc) awaitUpdate(t testing.TB, ok func(update) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for seen := 0; ; {
		p.mu.Lock()
		fresh := p.updates[seen:]
		seen = len(p.updates)
		p.mu.Unlock()
		for _, raw := range fresh {
			var n struct{ Update update }
			if json.Unmarshal(raw, &n) == nil && ok(n.Update) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the awaited session/update never came\nstderr:\n%s", p.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitExit waits for the process to end, at most bound, and returns its
// exit code (-1 when a signal ended it).
func (p *proc) waitExit(t testing.TB, bound time.Duration) int {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("exited %v after the client's last action", time.Since(start).Round(time.Millisecond))
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(bound):
		p.cmd.Process.Kill()
		<-done
		t.Fatalf("the process had not exited %v after the client's last action\nstderr:\n%s", bound, p.stderr)
		return -1
	}
}

// requireGracefulShutdown checks the logs: the shutdown ran to its end and
// no step of it gave up on a timeout.
func (p *proc) requireGracefulShutdown(t *testing.T) {
	t.Helper()
	logs := p.stderr.String()
	if !strings.Contains(logs, `msg="shut down"`) || strings.Contains(logs, "did not complete") || strings.Contains(logs, "deadline exceeded") {
		t.Errorf("shutdown was not graceful:\n%s", logs)
	}
}

// requireClosedLogs checks that every session file on disk is well formed
// and closes every turn it opened (the shutdown's turn/end was flushed).
func requireClosedLogs(t *testing.T, data string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(data, "sessions", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no session files (%v)", err)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		openCalls := map[string]bool{} // tool/call ids without a tool/result
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		for sc.Scan() {
			var ev struct {
				Type string
				Data struct {
					CallID  string `json:"callId"`
					Message struct {
						Content []struct {
							ToolCallID string `json:"toolCallId"`
						}
					}
				}
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("%s: bad line %q: %v", f, sc.Text(), err)
			}
			switch ev.Type {
			case "turn/start":
				open++
			case "turn/end":
				open--
			case "tool/call":
				openCalls[ev.Data.CallID] = true
			case "tool/result":
				for _, c := range ev.Data.Message.Content {
					delete(openCalls, c.ToolCallID)
				}
			}
		}
		fh.Close()
		if open != 0 {
			t.Errorf("%s: %d turn(s) left open", filepath.Base(f), open)
		}
		if len(openCalls) != 0 {
			t.Errorf("%s: tool call(s) %v left without a result", filepath.Base(f), slices.Sorted(maps.Keys(openCalls)))
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
