package main

// The crash test: the real binary runs a multi-child workload and is killed
// with SIGKILL at many deterministic storage steps (persistence's fault
// hook); a fresh process on the same data directory must replay every tool
// call the client saw, list or diagnose every child, and resume a child
// cold through send_message.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"iter"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/persistence"
)

// crashAtEnv is the 1-based storage step at which crash-serve kills
// itself with SIGKILL; unset or 0 only counts the steps, which it prints
// to stderr at exit as "storage steps: N".
const crashAtEnv = "ACP_AGENT_TEST_CRASH_AT"

// chunkPauseEnv, when set to a duration, makes crash-serve's model pause
// that long before each chunk, like a real provider's stream: the
// emitter's group commits then interleave with the stream, so kill
// points fall between chunks shown and chunks not yet durable.
const chunkPauseEnv = "ACP_AGENT_TEST_CHUNK_PAUSE"

// worktreeCrashEnv names the step of making a child's worktree (a
// worktree.Fault* point) at which crash-serve kills itself with SIGKILL.
const worktreeCrashEnv = "ACP_AGENT_TEST_WORKTREE_CRASH"

// firstRequestEnv names a file crash-serve's model creates at the first
// request of a session that is not a top-level one (a child's first model
// request: the worktree benchmark's end point).
const firstRequestEnv = "ACP_AGENT_TEST_FIRST_REQUEST"

// firstRequestModel marks a child's first model request in a file.
type firstRequestModel struct {
	m    model.Model
	file string
}

func (f firstRequestModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	if req.Caller.ScriptKey != "main" && req.Caller.Call == 0 {
		if fd, err := os.OpenFile(f.file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			fd.Close()
		}
	}
	return f.m.Stream(ctx, req)
}

// pacedModel paces a model's chunks (the workload, not an assertion).
type pacedModel struct {
	m     model.Model
	pause time.Duration
}

func (p pacedModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		for c, err := range p.m.Stream(ctx, req) {
			if err == nil {
				time.Sleep(p.pause)
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// crashServeCommand is "acp-agent crash-serve": the ACP server of the
// plain binary, with persistence's fault hook counting storage steps.
// Only the test binary has it.
func crashServeCommand() cli.Command {
	return cli.Command{
		Name:    "crash-serve",
		Usage:   "crash-serve",
		Summary: "serve ACP and SIGKILL at storage step $" + crashAtEnv + " (crash tests only)",
		Run: func(ctx context.Context, env *cli.Env, args []string) error {
			at, _ := strconv.ParseInt(env.Getenv(crashAtEnv), 10, 64)
			var steps atomic.Int64
			var wrap func(model.Model) model.Model
			if d, _ := time.ParseDuration(env.Getenv(chunkPauseEnv)); d > 0 {
				wrap = func(m model.Model) model.Model { return pacedModel{m, d} }
			}
			if f := env.Getenv(firstRequestEnv); f != "" {
				wrap = func(m model.Model) model.Model { return firstRequestModel{m, f} }
			}
			a, err := app.New(app.Config{
				DataDir: env.Flags.DataDir,
				Model:   env.Flags.Model,
				Version: "crash-test",
				Logger:  env.Logger,
				Getenv:  env.Getenv,
				Testing: &testhooks.Hooks{WrapModel: wrap, StorageFault: func(persistence.FaultPoint) {
					if n := steps.Add(1); n == at {
						syscall.Kill(os.Getpid(), syscall.SIGKILL)
						select {} // the signal is on its way
					}
				}, WorktreeFault: func(point string) {
					if point == env.Getenv(worktreeCrashEnv) {
						syscall.Kill(os.Getpid(), syscall.SIGKILL)
						select {} // the signal is on its way
					}
				}},
			})
			if err != nil {
				return err
			}
			err = errors.Join(a.Run(ctx, env.Stdin, env.Stdout), a.Close())
			fmt.Fprintf(env.Stderr, "storage steps: %d\n", steps.Load())
			return err
		},
	}
}

// crashWorkers are the children the parent starts, all in the background.
var crashWorkers = []string{"worker A", "worker B", "worker C"}

// crashScript is the model of the run before the crash: the parent starts
// every worker in one reply; each worker lists its agents (a tool call of
// its own) and answers; the parent notes each settlement.
func crashScript() string {
	var b strings.Builder
	b.WriteString("model:\n  main:\n    - text: \"Starting the workers now.\"\n      tool_calls:\n")
	for i, w := range crashWorkers {
		fmt.Fprintf(&b, "        - {id: call_start_%d, name: subagent, arguments: '{\"description\": %q, \"prompt\": \"Do part %d.\", \"run_in_background\": true}'}\n", i, w, i)
	}
	b.WriteString("    - text: STARTED\n")
	for range 12 {
		b.WriteString("    - text: NOTED\n")
	}
	writeWorkers(&b)
	return b.String()
}

func writeWorkers(b *strings.Builder) {
	for i, w := range crashWorkers {
		fmt.Fprintf(b, "  %s:\n", w)
		fmt.Fprintf(b, "    - text: \"Looking around first.\"\n      tool_calls: [{id: call_list_%d, name: list_agents, arguments: '{}'}]\n", i)
		fmt.Fprintf(b, "    - text: \"Part %d is done, all of it.\"\n", i)
		for range 8 {
			b.WriteString("    - text: PONG\n")
		}
	}
}

// resumeScript is the model after the restart. The parent's log already
// consumed `used` replies (its step/start count); from there, replies
// alternate a send_message to child and a text, so whichever turn comes
// first (a settlement notice or the test's prompt) asks the child.
func resumeScript(used int, child string) string {
	var b strings.Builder
	b.WriteString("model:\n  main:\n")
	for range used {
		b.WriteString("    - text: UNUSED\n")
	}
	for i := range 10 {
		fmt.Fprintf(&b, "    - tool_calls: [{id: call_cold_%d, name: send_message, arguments: '{\"subagent_id\": %q, \"message\": \"COLD_PING %d\"}'}]\n", i, child, i)
		b.WriteString("    - text: ASKED\n")
	}
	writeWorkers(&b)
	return b.String()
}

// catalogRow is one row of _acp-agent/subagents/list.
type catalogRow struct {
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	Mode     string `json:"mode"`
	Label    string `json:"label"`
	Activity string `json:"activity"`
	Reason   string `json:"reason"`
}

func listChildren(ctx context.Context, p *proc, parent string) ([]catalogRow, error) {
	var res struct {
		Entries []catalogRow `json:"entries"`
	}
	err := p.conn.Call(ctx, "_acp-agent/subagents/list", map[string]any{"sessionId": parent}, &res)
	return res.Entries, err
}

// toolCalls returns the tool_call updates among raw session/update params:
// call id → rawInput.
func toolCalls(updates []json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, u := range updates {
		var n struct {
			Update struct {
				Kind     string          `json:"sessionUpdate"`
				ID       string          `json:"toolCallId"`
				RawInput json.RawMessage `json:"rawInput"`
			} `json:"update"`
		}
		if json.Unmarshal(u, &n) == nil && n.Update.Kind == "tool_call" {
			out[n.Update.ID] = n.Update.RawInput
		}
	}
	return out
}

// fileEvent is one event line of a session file, read straight from disk.
type fileEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// readLog returns the header's parentSession and the events of the
// complete, parsable lines of a session file (a torn tail is ignored).
func readLog(t *testing.T, path string) (parent string, events []fileEvent) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			var h struct {
				ParentSession string `json:"parentSession"`
			}
			json.Unmarshal(sc.Bytes(), &h)
			parent = h.ParentSession
			continue
		}
		var ev fileEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type != "" {
			events = append(events, ev)
		}
	}
	return parent, events
}

func countType(evs []fileEvent, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// childFiles returns the ids of the session files whose header names
// parent (read straight from disk: what exists, listed or not).
func childFiles(t *testing.T, sdir, parent string) []string {
	t.Helper()
	ents, err := os.ReadDir(sdir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if p, _ := readLog(t, filepath.Join(sdir, e.Name())); p == parent {
			out = append(out, id)
		}
	}
	return out
}

// crashRun is what one run before the crash left for the checks.
type crashRun struct {
	parent string                     // "" if session/new never answered
	seen   map[string]json.RawMessage // tool calls the client was shown
	text   string                     // the parent's text chunks the client was shown
	steps  int64                      // storage steps printed (calibration only)
	killed bool
}

// runUntilCrash runs the workload under crash-serve killing itself at
// step at (0: never) and waits for the process to end: killed, or exited
// after the workload settled and stdin was closed.
func runUntilCrash(t *testing.T, data, script string, at int64) crashRun {
	t.Helper()
	p := startProcEnv(t, []string{crashAtEnv + "=" + strconv.FormatInt(at, 10)}, "--data-dir", data, "--model", "script:"+script, "crash-serve")
	exited := make(chan struct{})
	go func() { p.cmd.Wait(); close(exited) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var run crashRun
	var init map[string]any
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if p.conn.Call(ctx, "initialize", map[string]any{"protocolVersion": 1}, &init) == nil &&
		p.conn.Call(ctx, "session/new", map[string]any{"cwd": data, "mcpServers": []any{}}, &created) == nil {
		run.parent = created.SessionID
		prompted := make(chan struct{})
		go func() {
			var res map[string]any
			p.conn.Call(ctx, "session/prompt", map[string]any{"sessionId": run.parent, "prompt": []any{map[string]any{"type": "text", "text": "Run the workers."}}}, &res)
			close(prompted)
		}()
		// Until it dies, or the workload settles: every worker listed
		// and inactive after the prompt answered.
	wait:
		for {
			select {
			case <-exited:
				break wait
			case <-ctx.Done():
				t.Fatalf("workload did not settle\nstderr:\n%s", p.stderr)
			case <-time.After(20 * time.Millisecond):
			}
			select {
			case <-prompted:
			default:
				continue
			}
			rows, err := listChildren(ctx, p, run.parent)
			if err != nil {
				continue // dying
			}
			settled := len(rows) == len(crashWorkers)
			for _, r := range rows {
				settled = settled && r.Activity == "inactive"
			}
			if settled {
				break
			}
		}
	}
	p.stdin.Close()
	select {
	case <-exited:
	case <-ctx.Done():
		p.cmd.Process.Kill()
		<-exited
		t.Fatalf("no exit after stdin EOF\nstderr:\n%s", p.stderr)
	}
	<-p.lines
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	run.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	p.mu.Lock()
	run.seen = toolCalls(p.updates)
	run.text, _ = streamedOf(p.updates, run.parent)
	p.mu.Unlock()
	if i := strings.LastIndex(p.stderr.String(), "storage steps: "); i >= 0 {
		fmt.Sscanf(p.stderr.String()[i:], "storage steps: %d", &run.steps)
	}
	if !run.killed && at > 0 {
		t.Logf("step %d: not reached (exited normally)", at)
	}
	return run
}

// TestCrashAtStorageSteps kills the binary at evenly spread storage steps
// of the workload (at least 20) and checks what a new process sees.
func TestCrashAtStorageSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs the binary dozens of times")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(crashScript()), 0o600); err != nil {
		t.Fatal(err)
	}
	calib := runUntilCrash(t, filepath.Join(dir, "calibration"), script, 0)
	if calib.steps < 50 || calib.killed {
		t.Fatalf("calibration run counted %d storage steps (killed %v)", calib.steps, calib.killed)
	}
	const points = 24
	var killed, cold atomic.Int64
	t.Run("points", func(t *testing.T) {
		for i := range points {
			// Spread over the first 90%: a run may take a few steps fewer
			// than the calibration (scheduling), and a step never reached
			// is no kill point.
			at := 1 + int64(i)*(calib.steps*9/10)/points
			t.Run(fmt.Sprintf("step-%d", at), func(t *testing.T) {
				t.Parallel() // each point has its own data directory
				data := filepath.Join(dir, fmt.Sprintf("data-%d", at))
				run := runUntilCrash(t, data, script, at)
				if run.killed {
					killed.Add(1)
				}
				if checkAfterCrash(t, dir, data, run) {
					cold.Add(1)
				}
			})
		}
	})
	t.Logf("%d storage steps per run; %d of %d points killed the process; %d resumed a child cold", calib.steps, killed.Load(), points, cold.Load())
	if n := killed.Load(); n < 20 {
		t.Errorf("only %d kill points hit, want at least 20", n)
	}
	if n := cold.Load(); n < points/3 {
		t.Errorf("only %d runs resumed a child cold, want at least %d", n, points/3)
	}
}

// checkAfterCrash restarts on data and checks the replay, the catalog and
// (when a continuable child exists) a cold send_message. It reports
// whether a child was resumed cold.
func checkAfterCrash(t *testing.T, dir, data string, run crashRun) bool {
	t.Helper()
	sdir := filepath.Join(data, "sessions")
	if run.parent == "" {
		if len(run.seen) > 0 {
			t.Fatalf("tool calls seen without a session: %v", run.seen)
		}
		return false
	}
	parentLog := filepath.Join(sdir, run.parent+".jsonl")
	if _, err := os.Stat(parentLog); err != nil {
		t.Fatalf("session/new answered but the parent's log is gone: %v", err)
	}
	_, pevents := readLog(t, parentLog)
	used := countType(pevents, "step/start")
	children := childFiles(t, sdir, run.parent)

	// Pick a continuable child from disk to message after the restart: a
	// worker whose descriptor was written (its label is known then).
	target := ""
	for _, id := range children {
		_, evs := readLog(t, filepath.Join(sdir, id+".jsonl"))
		if countType(evs, "subagent/descriptor") > 0 {
			target = id
			break
		}
	}
	resume := filepath.Join(data, "resume.yaml")
	if err := os.WriteFile(resume, []byte(resumeScript(used, target)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "--data-dir", data, "--model", "script:"+resume)
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	var loaded map[string]any
	p.call(t, "session/load", map[string]any{"sessionId": run.parent, "cwd": data, "mcpServers": []any{}}, &loaded)
	p.mu.Lock()
	replayed := toolCalls(p.updates)
	replayedText, _ := streamedOf(p.updates, run.parent)
	p.updates = nil
	p.mu.Unlock()
	// 0. Every text chunk the client saw is in the replay.
	if !strings.HasPrefix(replayedText, run.text) {
		t.Errorf("shown text (%d bytes, ends %q) is not in the replay (%d bytes, ends %q)", len(run.text), tail(run.text), len(replayedText), tail(replayedText))
	}

	// 1. Every tool call the client saw is in the replay.
	for id := range run.seen {
		if _, ok := replayed[id]; !ok {
			t.Errorf("tool call %s was shown before the crash but is not in the replay (replayed %d calls)", id, len(replayed))
		}
	}
	// 2. Every child on disk is listed or diagnosed, and was asked for by
	// a delegation the parent's log holds (write-ahead).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := listChildren(ctx, p, run.parent)
	if err != nil {
		t.Fatalf("subagents/list: %v\nstderr:\n%s", err, p.stderr)
	}
	byID := map[string]catalogRow{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	delegated := map[string]bool{}
	for _, in := range replayed {
		var args struct {
			Description string `json:"description"`
		}
		if json.Unmarshal(in, &args) == nil && args.Description != "" {
			delegated[args.Description] = true
		}
	}
	for _, id := range children {
		r, ok := byID[id]
		if !ok {
			t.Errorf("child %s is on disk but neither listed nor diagnosed (rows %+v)", id, rows)
			continue
		}
		if r.Kind == "child" && !delegated[r.Label] {
			t.Errorf("child %s (%q) exists but the parent's replay holds no delegation for it", id, r.Label)
		}
	}
	if len(children) > len(crashWorkers) {
		t.Errorf("%d children on disk, the parent delegated at most %d", len(children), len(crashWorkers))
	}

	// 3. A cold send_message works: the child answers a new message.
	if target == "" {
		p.finish(t)
		return false
	}
	var res struct {
		StopReason string `json:"stopReason"`
	}
	p.call(t, "session/prompt", map[string]any{"sessionId": run.parent, "prompt": []any{map[string]any{"type": "text", "text": "Ask a worker."}}}, &res)
	childLog := filepath.Join(sdir, target+".jsonl")
	for {
		_, evs := readLog(t, childLog)
		if answeredPing(evs) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("child %s never answered a cold send_message (parent stop %q)\nstderr:\n%s", target, res.StopReason, p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if code, verdict := p.finish(t); code != 0 || verdict != nil {
		t.Errorf("exit %d (%v)\nstderr:\n%s", code, verdict, p.stderr)
	}
	return true
}

// answeredPing reports whether a COLD_PING user message is followed by
// an assistant message.
func answeredPing(evs []fileEvent) bool {
	i := slices.IndexFunc(evs, func(ev fileEvent) bool {
		return ev.Type == "user/message" && strings.Contains(string(ev.Data), "COLD_PING")
	})
	return i >= 0 && slices.ContainsFunc(evs[i:], func(ev fileEvent) bool { return ev.Type == "assistant/message" })
}
