package external_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/driver/external"
)

var (
	buildOnce sync.Once
	fakeBin   string
	buildErr  error
)

// fakeAgent builds testdata/fakeagent once per test binary.
func fakeAgent(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fakeagent")
		if err != nil {
			buildErr = err
			return
		}
		fakeBin = filepath.Join(dir, "fakeagent")
		out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakeagent").CombinedOutput()
		if err != nil {
			buildErr = err
			fakeBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build fakeagent: %v\n%s", buildErr, fakeBin)
	}
	return fakeBin
}

// gate is a permission gate that answers from a queue and records what
// it was asked.
type gate struct {
	mu     sync.Mutex
	asked  []workspace.PermissionRequest
	answer func(workspace.PermissionRequest) error
}

func (g *gate) Authorize(ctx context.Context, req workspace.PermissionRequest) error {
	g.mu.Lock()
	g.asked = append(g.asked, req)
	ans := g.answer
	g.mu.Unlock()
	if ans == nil {
		return nil
	}
	return ans(req)
}

func (g *gate) requests() []workspace.PermissionRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]workspace.PermissionRequest(nil), g.asked...)
}

type fixture struct {
	t     *testing.T
	dir   string
	out   string
	gate  *gate
	store *session.Store
	sess  *session.Session
	child *external.Child
	agent *agent.Agent
	opts  external.Options
	cmd   external.Command
}

func newFixture(t *testing.T, mode string, tune func(*external.Options)) *fixture {
	t.Helper()
	bin := fakeAgent(t)
	f := &fixture{t: t, dir: t.TempDir(), gate: &gate{}}
	f.out = filepath.Join(t.TempDir(), "observed.txt")
	if err := os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("hello notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FAKE_MODE": mode, "FAKE_OUT": f.out, "PATH": os.Getenv("PATH")}
	f.opts = external.Options{
		Workspace:    workspace.Static{Cwd: f.dir, Files: local.Files{}, Commands: local.Commands{}, Permissions: f.gate},
		Getenv:       func(k string) string { return env[k] },
		InitTimeout:  5 * time.Second,
		ReplyTimeout: 5 * time.Second,
		CancelGrace:  2 * time.Second,
		KillGrace:    200 * time.Millisecond,
	}
	if tune != nil {
		tune(&f.opts)
	}
	f.cmd = external.Command{Name: "fake", Command: bin, Env: []string{"FAKE_MODE", "FAKE_OUT"}}
	f.store = session.NewStore(&session.DeterministicSources{})
	s, err := f.store.Create(session.Header{ID: "child-1", Cwd: f.dir}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.sess = s
	f.build()
	return f
}

// build makes the child's agent over the fixture's session (again after
// a "restart").
func (f *fixture) build() {
	f.child = external.New(f.sess, f.cmd, f.opts)
	reg, err := tool.NewRegistry(f.child.Tool())
	if err != nil {
		f.t.Fatal(err)
	}
	f.agent = agent.New(f.sess, agent.Options{Model: f.child, Tools: reg, MaxSteps: 1000, OnClose: f.child.Close})
	f.t.Cleanup(func() { _ = f.agent.Close(context.Background()) })
}

func (f *fixture) prompt(text string, timeout time.Duration) agent.TurnResult {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := f.agent.Prompt(ctx, session.Message{Role: session.RoleUser, Content: []session.Block{session.Text(text)}})
	if err != nil {
		f.t.Fatalf("prompt: %v", err)
	}
	return res
}

func (f *fixture) observed() string {
	b, _ := os.ReadFile(f.out)
	return string(b)
}

func (f *fixture) events(typ string) []session.Event {
	evs, err := f.sess.Events()
	if err != nil {
		f.t.Fatal(err)
	}
	var out []session.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func turnEnd(t *testing.T, f *fixture) session.TurnEndReason {
	t.Helper()
	ends := f.events(session.TypeTurnEnd)
	if len(ends) == 0 {
		t.Fatal("no turn/end")
	}
	d, err := session.DecodeData[session.TurnEndData](ends[len(ends)-1])
	if err != nil {
		t.Fatal(err)
	}
	return d.Reason
}

func TestDrivesAnExternalAgentThroughTheWorkspace(t *testing.T) {
	f := newFixture(t, "normal", nil)
	f.prompt("please write", 20*time.Second)
	r := turnEnd(t, f)
	if r.Kind != session.TurnEndCompleted {
		t.Fatalf("turn ended %+v", r)
	}
	obs := f.observed()
	for _, want := range []string{"initialize fs=true terminal=true", "new " + f.dir, "prompt please write"} {
		if !strings.Contains(obs, want) {
			t.Errorf("the agent did not observe %q:\n%s", want, obs)
		}
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, "notes.txt"))
	if string(got) != "written by fakeagent\n" {
		t.Errorf("notes.txt = %q: the write did not go through the workspace", got)
	}
	// The edit was asked once (the agent's own question), not again for
	// the write it was about.
	asked := f.gate.requests()
	if len(asked) != 1 || asked[0].Kind != workspace.KindEdit || asked[0].Subject != "notes.txt" || asked[0].CallID != "t2" {
		t.Fatalf("gate asked %+v, want one edit question about notes.txt for call t2", asked)
	}
	calls := f.events(session.TypeToolCall)
	if len(calls) != 2 {
		t.Fatalf("tool calls recorded: %d, want 2", len(calls))
	}
	results := f.events(session.TypeToolResult)
	if len(results) != 2 || !strings.Contains(string(results[0].Data), "hello notes") {
		t.Fatalf("tool results %v", results)
	}
	if out := agent.FinalOutput(mustEvents(t, f)); len(out) == 0 || !strings.Contains(out[0].Text, "done: please write") {
		t.Fatalf("final output %+v", out)
	}
	rec, err := external.LastRecord(mustEvents(t, f))
	if err != nil || rec == nil || rec.SessionID != "fake-1" || !rec.LoadSession || rec.AgentName != "fakeagent" || rec.Command != f.cmd.Command {
		t.Fatalf("external record %+v, %v", rec, err)
	}
}

func mustEvents(t *testing.T, f *fixture) []session.Event {
	evs, err := f.sess.Events()
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestRejectedPermissionReachesTheAgent(t *testing.T) {
	f := newFixture(t, "normal", nil)
	f.gate.answer = func(workspace.PermissionRequest) error {
		return &tool.Error{Code: workspace.CodePermissionRejected, Message: "no"}
	}
	f.prompt("please write", 20*time.Second)
	if !strings.Contains(f.observed(), "write refused") {
		t.Fatalf("the agent was not told no:\n%s", f.observed())
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, "notes.txt"))
	if string(got) != "hello notes\n" {
		t.Fatalf("notes.txt changed: %q", got)
	}
}

func TestFailuresSettleTheTurnWithTheCause(t *testing.T) {
	for _, tc := range []struct {
		mode string
		tune func(*external.Options)
		want []string
	}{
		{mode: "crash", want: []string{"exited (exit status 3)", "boom, out of memory"}},
		{mode: "hang", tune: func(o *external.Options) { o.ReplyTimeout = 300 * time.Millisecond }, want: []string{"hung"}},
		{mode: "garbage", want: []string{"not JSON-RPC", "panic: this is not json"}},
		{mode: "initerr", want: []string{"refused initialize", "Authentication required", "FAKE_KEY"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f := newFixture(t, tc.mode, tc.tune)
			f.prompt("go", 20*time.Second)
			r := turnEnd(t, f)
			if r.Kind != session.TurnEndError || r.Error == nil || r.Error.Code != external.CodeExternalFailed {
				t.Fatalf("turn ended %+v (error %+v)", r, r.Error)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Error.Message, w) {
					t.Errorf("cause %q lacks %q", r.Error.Message, w)
				}
			}
		})
	}
}

func TestPermissionAfterCancelIsCancelled(t *testing.T) {
	f := newFixture(t, "permcancel", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.agent.Prompt(ctx, session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("go")}})
	}()
	// Wait until the agent announced its call (the mirror tool is waiting).
	deadline := time.Now().Add(10 * time.Second)
	for len(f.events(session.TypeToolCall)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no tool call")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.agent.Cancel(session.AbortReason{Kind: agent.AbortUser}, false)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the cancelled turn did not end")
	}
	if err := f.agent.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	obs := f.observed()
	if !strings.Contains(obs, "cancel fake-1") || !strings.Contains(obs, "permission cancelled") {
		t.Fatalf("the agent saw:\n%s", obs)
	}
	if n := len(f.gate.requests()); n != 0 {
		t.Fatalf("the person was asked %d questions after the cancel", n)
	}
	if r := turnEnd(t, f); r.Kind != session.TurnEndAborted && r.Kind != session.TurnEndInterrupted {
		t.Fatalf("turn ended %+v", r)
	}
}

func TestNestedChildrenAreRecorded(t *testing.T) {
	var mu sync.Mutex
	var told []external.Nested
	f := newFixture(t, "nested", func(o *external.Options) {
		o.OnNested = func(_ string, n external.Nested) { mu.Lock(); told = append(told, n); mu.Unlock() }
	})
	f.prompt("go", 20*time.Second)
	if r := turnEnd(t, f); r.Kind != session.TurnEndCompleted {
		t.Fatalf("turn ended %+v", r)
	}
	nested := external.NestedChildren(mustEvents(t, f))
	if len(nested) != 1 || nested[0].SessionID != "nested-7" || nested[0].Title != "Scout" || nested[0].State != "idle" || nested[0].StopReason != "end_turn" {
		t.Fatalf("nested children %+v", nested)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 2 {
		t.Fatalf("OnNested told %d times, want 2", len(told))
	}
}

func TestColdResumeLoadsTheRecordedSession(t *testing.T) {
	f := newFixture(t, "normal", nil)
	f.prompt("first", 20*time.Second)
	// The child settles: its agent closes, which stops the process.
	if err := f.agent.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.build()
	f.prompt("second", 20*time.Second)
	if r := turnEnd(t, f); r.Kind != session.TurnEndCompleted {
		t.Fatalf("turn ended %+v", r)
	}
	obs := f.observed()
	if strings.Count(obs, "initialize") != 2 || !strings.Contains(obs, "load fake-1") || strings.Count(obs, "new ") != 1 {
		t.Fatalf("the agent saw:\n%s", obs)
	}
	out := agent.FinalOutput(mustEvents(t, f))
	if len(out) == 0 || strings.Contains(out[0].Text, "REPLAYED") || !strings.Contains(out[0].Text, "done: second") {
		t.Fatalf("final output %+v: the replay leaked into the turn", out)
	}
}

func TestColdResumeWithoutLoadSessionFailsClearly(t *testing.T) {
	f := newFixture(t, "normal", nil)
	f.cmd.Env = append(f.cmd.Env, "FAKE_NOLOAD")
	env := map[string]string{"FAKE_MODE": "normal", "FAKE_OUT": f.out, "PATH": os.Getenv("PATH"), "FAKE_NOLOAD": "1"}
	f.opts.Getenv = func(k string) string { return env[k] }
	_ = f.agent.Close(context.Background())
	f.build()
	f.prompt("first", 20*time.Second)
	_ = f.agent.Close(context.Background())
	f.build()
	f.prompt("second", 20*time.Second)
	r := turnEnd(t, f)
	if r.Kind != session.TurnEndError || r.Error == nil || !strings.HasPrefix(r.Error.Message, "cannot resume: the agent does not support session/load") {
		t.Fatalf("turn ended %+v (%+v)", r, r.Error)
	}
	if strings.Count(f.observed(), "initialize") != 1 {
		t.Fatalf("the command was started again:\n%s", f.observed())
	}
}

func TestApproveRefusalStartsNothing(t *testing.T) {
	f := newFixture(t, "normal", func(o *external.Options) {
		o.Approve = func(context.Context, string, external.Command) error {
			return &tool.Error{Code: workspace.CodeModeForbids, Message: "the session is in plan mode"}
		}
	})
	f.prompt("go", 20*time.Second)
	r := turnEnd(t, f)
	if r.Kind != session.TurnEndError || r.Error == nil || !strings.Contains(r.Error.Message, "plan mode") {
		t.Fatalf("turn ended %+v", r)
	}
	if f.observed() != "" {
		t.Fatalf("the command ran:\n%s", f.observed())
	}
}

// A command the agent runs through terminal/* streams its output: the
// agent reads its first line with terminal/output while it still runs
// (it runs until the agent, having seen that line, lets it end), and the
// whole output with its exit status once it ended.
func TestTerminalOutputIsStreamed(t *testing.T) {
	f := newFixture(t, "terminal", nil)
	f.prompt("run it", 30*time.Second)
	if r := turnEnd(t, f); r.Kind != session.TurnEndCompleted {
		t.Fatalf("turn ended %+v", r)
	}
	obs := f.observed()
	for _, want := range []string{`streamed "first"`, `final "first\nsecond" exited=true streamed=true`} {
		if !strings.Contains(obs, want) {
			t.Errorf("the agent did not observe %q:\n%s", want, obs)
		}
	}
}

// The process lives while the child runs: a second message before it
// settles goes to the same process (one initialize, one session). When
// the child settles (its agent closes) the process is stopped — it is
// gone and its record in the registry of running commands is removed —
// and the next message starts the command again (Approve is asked at each
// start: the app remembers the person's answer per session) and takes up
// the recorded session with session/load.
func TestSettleStopsTheProcessAndTheNextMessageLoadsIt(t *testing.T) {
	root := filepath.Join(t.TempDir(), "running")
	running, err := local.OpenRunning(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = running.Close() })
	var approvals atomic.Int32
	f := newFixture(t, "normal", func(o *external.Options) {
		o.Running = running
		o.Approve = func(context.Context, string, external.Command) error { approvals.Add(1); return nil }
	})
	f.prompt("first", 20*time.Second)
	f.prompt("again", 20*time.Second)
	pids := f.pids()
	if obs := f.observed(); len(pids) != 1 || strings.Count(obs, "initialize") != 1 || strings.Contains(obs, "load ") || !strings.Contains(obs, "prompt again") || approvals.Load() != 1 {
		t.Fatalf("a message before the settlement did not reuse the process (approvals %d):\n%s", approvals.Load(), obs)
	}
	if n := runningRecords(t, root); n != 1 {
		t.Fatalf("%d running records while the child runs, want 1", n)
	}
	if !alive(pids[0]) {
		t.Fatalf("the agent's process %d is gone before the settlement", pids[0])
	}
	// The child settles: its agent closes.
	if err := f.agent.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if alive(pids[0]) {
		t.Fatalf("the agent's process %d outlived the settlement", pids[0])
	}
	if n := runningRecords(t, root); n != 0 {
		t.Fatalf("%d running records after the settlement, want 0", n)
	}
	f.build()
	f.prompt("second", 20*time.Second)
	if r := turnEnd(t, f); r.Kind != session.TurnEndCompleted {
		t.Fatalf("turn ended %+v", r)
	}
	obs := f.observed()
	if strings.Count(obs, "initialize") != 2 || strings.Count(obs, "new ") != 1 || !strings.Contains(obs, "load fake-1") || !strings.Contains(obs, "prompt second") || len(f.pids()) != 2 || approvals.Load() != 2 {
		t.Fatalf("the next message did not start the command again and load the session (approvals %d):\n%s", approvals.Load(), obs)
	}
	if err := f.agent.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := f.pids()[1]; alive(p) {
		t.Fatalf("the restarted process %d outlived the second settlement", p)
	}
}

// pids are the fake agent's processes, in start order (each notes its pid).
func (f *fixture) pids() []int {
	var out []int
	for _, line := range strings.Split(f.observed(), "\n") {
		if s, ok := strings.CutPrefix(line, "pid "); ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				f.t.Fatalf("pid line %q", line)
			}
			out = append(out, n)
		}
	}
	return out
}

// alive reports whether process pid exists (it was reaped once it is not).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// runningRecords counts the records of running commands in the registry
// at root (<owner>/<n>).
func runningRecords(t *testing.T, root string) int {
	t.Helper()
	recs, err := filepath.Glob(filepath.Join(root, "*", "[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}
