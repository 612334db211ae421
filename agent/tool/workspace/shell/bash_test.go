package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
	"github.com/acp-agent/acp-agent/internal/proctest"
)

func TestMain(m *testing.M) {
	sandbox.Main() // serves sandboxed commands (sandbox_test.go)
	goleak.VerifyTestMain(m)
}

type caller = workspacetest.Caller

func run(t *testing.T, ctx context.Context, env workspace.Env, args map[string]any, progress func(tool.Progress)) tool.Result {
	t.Helper()
	reg, err := tool.NewRegistry(Tools(workspace.Static(env))...)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	return reg.Execute(ctx, tool.Invocation{CallID: "c1", Name: ToolName, Arguments: raw, Caller: caller("s"), Progress: progress})
}

func localEnv(t *testing.T, perms workspace.Permissions) workspace.Env {
	return workspace.Env{Cwd: t.TempDir(), Commands: local.Commands{KillGrace: 200 * time.Millisecond}, Permissions: perms}
}

func TestBash(t *testing.T) {
	tests := []struct {
		name  string
		args  map[string]any
		want  string
		code  string
		exit  int
		title string
	}{
		{name: "output and exit code", args: map[string]any{"command": "echo hi; echo err >&2"}, want: "hi\nerr\n[Exit code 0]", title: "echo hi; echo err >&2"},
		{name: "non-zero exit is a result", args: map[string]any{"command": "false", "description": "Check"}, want: "(no output)\n[Exit code 1]", exit: 1, title: "false"},
		// What the person sees is what runs: the title is the command,
		// never the model's description of it.
		{name: "description does not replace the command", args: map[string]any{"command": "rm -rf build", "description": "List files"},
			want: "(no output)\n[Exit code 0]", title: "rm -rf build"},
		{name: "runs in the cwd", args: map[string]any{"command": "ls"}, want: "marker.txt\n[Exit code 0]", title: "ls"},
		{name: "timeout", args: map[string]any{"command": "echo started; sleep 30", "timeout": 1000}, code: CodeCommandTimedOut,
			want: "Error: started\n[The command timed out after 1s and was stopped with its processes.]", title: "echo started; sleep 30"},
		{name: "multi-line title", args: map[string]any{"command": "echo a\necho b"}, want: "a\nb\n[Exit code 0]", title: `echo a\necho b`},
		{name: "long command keeps head and tail", args: map[string]any{"command": "echo " + strings.Repeat("x", 200) + " end"},
			want: strings.Repeat("x", 200) + " end\n[Exit code 0]", title: "echo " + strings.Repeat("x", 74) + "…" + strings.Repeat("x", 36) + " end"},
		{name: "bidi characters escaped", args: map[string]any{"command": "echo ok # \u202e"},
			want: "ok\n[Exit code 0]", title: `echo ok # \u{202E}`},
		{name: "empty command", args: map[string]any{"command": "  "}, code: tool.CodeInvalidArgs},
		{name: "timeout over the maximum", args: map[string]any{"command": "true", "timeout": 600001}, code: tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perms := &local.Scripted{}
			env := localEnv(t, perms)
			if err := os.WriteFile(filepath.Join(env.Cwd, "marker.txt"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			res := run(t, context.Background(), env, tt.args, nil)
			if workspacetest.ErrCode(res) != tt.code {
				t.Fatalf("%q code %q, want %q", workspacetest.Text(res), workspacetest.ErrCode(res), tt.code)
			}
			if tt.want != "" && workspacetest.Text(res) != tt.want {
				t.Fatalf("got %q, want %q", workspacetest.Text(res), tt.want)
			}
			if tt.title == "" {
				return
			}
			reqs := perms.Requests()
			if len(reqs) != 1 || reqs[0].Kind != workspace.KindExecute || reqs[0].Tool != ToolName || reqs[0].Title != tt.title || reqs[0].CallID != "c1" {
				t.Fatalf("requests %+v", reqs)
			}
			// The whole command is in the content as a code block, the
			// description only as secondary text after it.
			cmd := tt.args["command"].(string)
			if !strings.HasPrefix(reqs[0].Detail, "```sh\n"+cmd+"\n```") || reqs[0].Subject != cmd {
				t.Fatalf("detail %q subject %q", reqs[0].Detail, reqs[0].Subject)
			}
			if d, _ := tt.args["description"].(string); d != "" && !strings.HasSuffix(reqs[0].Detail, "\n\n"+d) {
				t.Fatalf("detail %q lacks the description", reqs[0].Detail)
			}
			if out, ok := res.Raw.(Output); ok && out.ExitCode != nil && *out.ExitCode != tt.exit {
				t.Fatalf("exit %d", *out.ExitCode)
			}
		})
	}
}

func TestBashRefusedDoesNotRun(t *testing.T) {
	for _, code := range []string{workspace.CodePermissionRejected, workspace.CodePermissionCancelled, workspace.CodeModeForbids} {
		t.Run(code, func(t *testing.T) {
			perms := &local.Scripted{Decide: func(workspace.PermissionRequest) error { return &tool.Error{Code: code, Message: "no"} }}
			env := localEnv(t, perms)
			res := run(t, context.Background(), env, map[string]any{"command": "touch ran"}, nil)
			if !res.IsError || workspacetest.ErrCode(res) != code {
				t.Fatalf("%q code %q", workspacetest.Text(res), workspacetest.ErrCode(res))
			}
			if _, err := os.Stat(filepath.Join(env.Cwd, "ran")); err == nil {
				t.Fatal("a refused command ran")
			}
		})
	}
	t.Run("no gate", func(t *testing.T) {
		env := localEnv(t, nil)
		res := run(t, context.Background(), env, map[string]any{"command": "touch ran"}, nil)
		if workspacetest.ErrCode(res) != workspace.CodePermissionRejected {
			t.Fatalf("%q", workspacetest.ErrCode(res))
		}
		if _, err := os.Stat(filepath.Join(env.Cwd, "ran")); err == nil {
			t.Fatal("a command ran without a gate")
		}
	})
}

func waitPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(file); strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatal("the command did not start")
	return 0
}

// A command that never ends: its timeout stops it and its background
// grandchild; cancelling the call (session/cancel) does the same.
func TestBashNeverEnding(t *testing.T) {
	for _, how := range []string{"timeout", "cancel"} {
		t.Run(how, func(t *testing.T) {
			env := localEnv(t, local.AllowAll{})
			pidFile := filepath.Join(env.Cwd, "bg.pid")
			args := map[string]any{"command": "sleep 1000 & echo $! > bg.pid; while :; do sleep 1; done"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if how == "timeout" {
				args["timeout"] = 1000
			}
			done := make(chan tool.Result, 1)
			go func() { done <- run(t, ctx, env, args, nil) }()
			pid := waitPID(t, pidFile)
			if how == "cancel" {
				cancel()
			}
			var res tool.Result
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the call did not return")
			}
			want := CodeCommandTimedOut
			if how == "cancel" {
				want = tool.CodeAborted
			}
			if workspacetest.ErrCode(res) != want {
				t.Fatalf("%q code %q, want %s", workspacetest.Text(res), workspacetest.ErrCode(res), want)
			}
			if !proctest.Gone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("background process %d survived", pid)
			}
		})
	}
}

// terminalCommands stands in for a client terminal: it shows a terminal
// id while running and reports it.
type terminalCommands struct {
	mu   sync.Mutex
	cmds []workspace.Command
}

func (c *terminalCommands) Run(_ context.Context, cmd workspace.Command, display func(session.ToolDisplay)) (workspace.CommandResult, error) {
	c.mu.Lock()
	c.cmds = append(c.cmds, cmd)
	c.mu.Unlock()
	display(session.ToolDisplay{TerminalID: "term-1"})
	zero := 0
	return workspace.CommandResult{Output: "ok\n", ExitCode: &zero, TerminalID: "term-1"}, nil
}

func TestBashThroughATerminal(t *testing.T) {
	cmds := &terminalCommands{}
	env := workspace.Env{Cwd: "/work/project", Commands: cmds, Permissions: local.AllowAll{}}
	var progress []tool.Progress
	res := run(t, context.Background(), env, map[string]any{"command": "make", "timeout": 5000}, func(p tool.Progress) { progress = append(progress, p) })
	if res.IsError || res.Display == nil || res.Display.TerminalID != "term-1" || res.Raw.(Output).TerminalID != "term-1" {
		t.Fatalf("result %+v", res)
	}
	if len(progress) != 1 || progress[0].Display == nil || progress[0].Display.TerminalID != "term-1" {
		t.Fatalf("progress %+v", progress)
	}
	c := cmds.cmds[0]
	if c.Cwd != "/work/project" || c.Timeout != 5*time.Second || c.OutputLimit != OutputLimit || c.CallID != "c1" || c.Command != "make" {
		t.Fatalf("command %+v", c)
	}
	run(t, context.Background(), env, map[string]any{"command": "make"}, nil)
	if got := cmds.cmds[1].Timeout; got != DefaultTimeout {
		t.Fatalf("default timeout %v", got)
	}
}
