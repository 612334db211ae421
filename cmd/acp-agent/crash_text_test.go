package main

// Kill points inside text streaming: the binary streams one long answer
// (reasoning, then text, word by word) and is killed at storage steps
// spread over it; a new process must replay every chunk the client saw.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// textCrashScript is one reply of many distinct words, so a lost chunk
// cannot hide behind an equal neighbour.
func textCrashScript() string {
	var reasoning, text strings.Builder
	for i := range 40 {
		fmt.Fprintf(&reasoning, "think%d ", i)
	}
	for i := range 200 {
		fmt.Fprintf(&text, "word%d ", i)
	}
	return fmt.Sprintf("model:\n  main:\n    - reasoning: %q\n      text: %q\n", reasoning.String(), text.String())
}

// streamed returns the concatenated text of the message and thought
// chunks among raw session/update params, in order.
func streamed(updates []json.RawMessage) (text, thought string) {
	return streamedOf(updates, "")
}

// streamedOf is streamed for the updates of one session ("" = all).
func streamedOf(updates []json.RawMessage, sessionID string) (text, thought string) {
	var tb, hb strings.Builder
	for _, u := range updates {
		var n struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind    string `json:"sessionUpdate"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if json.Unmarshal(u, &n) != nil || (sessionID != "" && n.SessionID != sessionID) {
			continue
		}
		switch n.Update.Kind {
		case "agent_message_chunk":
			tb.WriteString(n.Update.Content.Text)
		case "agent_thought_chunk":
			hb.WriteString(n.Update.Content.Text)
		}
	}
	return tb.String(), hb.String()
}

type textRun struct {
	session       string
	text, thought string // what the client was shown
	steps         int64
	killed        bool
}

// runTextUntilCrash streams the answer under crash-serve killing itself
// at step at (0: never) and waits for the process to end.
func runTextUntilCrash(t *testing.T, data, script string, at int64) textRun {
	t.Helper()
	p := startProcEnv(t, []string{crashAtEnv + "=" + strconv.FormatInt(at, 10), chunkPauseEnv + "=1ms"}, "--data-dir", data, "--model", "script:"+script, "crash-serve")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var run textRun
	var init map[string]any
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if p.conn.Call(ctx, "initialize", map[string]any{"protocolVersion": 1}, &init) == nil &&
		p.conn.Call(ctx, "session/new", map[string]any{"cwd": data, "mcpServers": []any{}}, &created) == nil {
		run.session = created.SessionID
		var res map[string]any
		// Returns when the turn ends or the process dies.
		p.conn.Call(ctx, "session/prompt", map[string]any{"sessionId": run.session, "prompt": []any{map[string]any{"type": "text", "text": "Explain."}}}, &res)
	}
	p.stdin.Close()
	p.cmd.Wait()
	<-p.lines
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	run.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	p.mu.Lock()
	run.text, run.thought = streamed(p.updates)
	p.mu.Unlock()
	if i := strings.LastIndex(p.stderr.String(), "storage steps: "); i >= 0 {
		fmt.Sscanf(p.stderr.String()[i:], "storage steps: %d", &run.steps)
	}
	return run
}

// TestCrashInsideTextStreaming: at every kill point, the text and thought
// the client was shown are a prefix of what the restarted process replays
// (nothing shown is lost), and most points fall inside the stream.
func TestCrashInsideTextStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs the binary dozens of times")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(textCrashScript()), 0o600); err != nil {
		t.Fatal(err)
	}
	calib := runTextUntilCrash(t, filepath.Join(dir, "calibration"), script, 0)
	if calib.steps < 200 || calib.killed || !strings.HasSuffix(calib.text, "word199 ") {
		t.Fatalf("calibration run: %d storage steps, killed %v, text ends %q", calib.steps, calib.killed, calib.text[max(0, len(calib.text)-20):])
	}
	const points = 16
	var mid atomic.Int64
	t.Run("points", func(t *testing.T) {
		for i := range points {
			at := 1 + int64(i)*(calib.steps*9/10)/points
			t.Run(fmt.Sprintf("step-%d", at), func(t *testing.T) {
				t.Parallel()
				data := filepath.Join(dir, fmt.Sprintf("data-%d", at))
				run := runTextUntilCrash(t, data, script, at)
				if !run.killed {
					t.Logf("step %d: not reached", at)
				}
				if run.session == "" {
					if run.text != "" || run.thought != "" {
						t.Fatalf("text shown without a session")
					}
					return
				}
				t.Logf("step %d: killed %v, shown %d text bytes, %d thought bytes", at, run.killed, len(run.text), len(run.thought))
				if run.killed && (run.text != "" || run.thought != "") && !strings.HasSuffix(run.text, "word199 ") {
					mid.Add(1)
				}
				p := startProc(t, "--data-dir", data, "--model", "script:"+script)
				var init, loaded map[string]any
				p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
				p.call(t, "session/load", map[string]any{"sessionId": run.session, "cwd": data, "mcpServers": []any{}}, &loaded)
				p.mu.Lock()
				text, thought := streamed(p.updates)
				p.mu.Unlock()
				if !strings.HasPrefix(text, run.text) {
					t.Errorf("shown text (%d bytes, ends %q) is not in the replay (%d bytes, ends %q)",
						len(run.text), tail(run.text), len(text), tail(text))
				}
				if !strings.HasPrefix(thought, run.thought) {
					t.Errorf("shown thought (%d bytes, ends %q) is not in the replay (%d bytes, ends %q)",
						len(run.thought), tail(run.thought), len(thought), tail(thought))
				}
				if code, verdict := p.finish(t); code != 0 || verdict != nil {
					t.Errorf("exit %d (%v)\nstderr:\n%s", code, verdict, p.stderr)
				}
			})
		}
	})
	t.Logf("%d storage steps per run; %d of %d kill points fell inside the stream", calib.steps, mid.Load(), points)
	if n := mid.Load(); n < points/2 {
		t.Errorf("only %d kill points inside the stream, want at least %d", n, points/2)
	}
}

func tail(s string) string { return s[max(0, len(s)-24):] }
