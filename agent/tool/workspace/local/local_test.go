package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/internal/proctest"
)

func TestMain(m *testing.M) {
	sandbox.Main() // serves the re-executed sandbox helper
	// The test binary doubles as an agent that runs one command and is
	// killed by TestAgentKilledLeavesNothing.
	if dir := os.Getenv(helperAgentEnv); dir != "" {
		helperAgent(dir)
		return
	}
	if dir := os.Getenv(helperCgroupAgentEnv); dir != "" {
		helperCgroupAgent(dir)
		return
	}
	goleak.VerifyTestMain(m)
}

func code(err error) string {
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

func TestFilesReadTextFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := write("a.txt", "one\ntwo\nthree\nfour")
	bin := write("b.bin", "ab\x00cd")
	big := write("big.txt", strings.Repeat("0123456789\n", 100))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	small := Files{MaxReadBytes: 100}
	tests := []struct {
		name        string
		files       Files
		path        string
		line, limit int
		want        string
		wantCode    string
	}{
		{"whole", Files{}, text, 0, 0, "one\ntwo\nthree\nfour", ""},
		{"window", Files{}, text, 2, 2, "two\nthree\n", ""},
		{"window to end", Files{}, text, 3, 0, "three\nfour", ""},
		{"window past end", Files{}, text, 9, 5, "", ""},
		{"binary", Files{}, bin, 0, 0, "", workspace.CodeBinaryFile},
		{"missing", Files{}, filepath.Join(dir, "nope"), 0, 0, "", workspace.CodeFileNotFound},
		{"directory", Files{}, dir, 0, 0, "", workspace.CodeNotRegularFile},
		{"fifo does not block", Files{}, fifo, 0, 0, "", workspace.CodeNotRegularFile},
		{"whole over cap", small, big, 0, 0, "", workspace.CodeFileTooLarge},
		{"window under cap", small, big, 50, 2, "0123456789\n0123456789\n", ""},
		{"window over cap", small, big, 1, 20, "", workspace.CodeFileTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.files.ReadTextFile(context.Background(), tt.path, tt.line, tt.limit)
			if tt.wantCode != "" {
				if code(err) != tt.wantCode {
					t.Fatalf("err = %v (code %q), want code %s", err, code(err), tt.wantCode)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFilesReadWindowOfLongLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "long.txt")
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	if err := os.WriteFile(p, []byte(long+"\nsecond\n"+long), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Files{}.ReadTextFile(context.Background(), p, 2, 1)
	if err != nil || got != "second\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = Files{}.ReadTextFile(context.Background(), p, 3, 1)
	if err != nil || got != long {
		t.Fatalf("third line: len %d, %v", len(got), err)
	}
}

func TestFilesWriteTextFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "dir", "new.txt")
	if err := (Files{}).WriteTextFile(context.Background(), p, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "hello\n" {
		t.Fatalf("content %q", b)
	}
	exe := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(exe, []byte("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (Files{}).WriteTextFile(context.Background(), exe, "new"); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(exe); info.Mode().Perm() != 0o755 {
		t.Fatalf("mode changed to %v", info.Mode())
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Files{}).WriteTextFile(context.Background(), fifo, "x"); code(err) != workspace.CodeNotRegularFile {
		t.Fatalf("fifo: %v", err)
	}
	if err := (Files{}).WriteTextFile(context.Background(), dir, "x"); code(err) != workspace.CodeNotRegularFile {
		t.Fatalf("dir: %v", err)
	}
}

func TestCommandsRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		cmd       string
		limit     int
		wantOut   string
		wantCode  int
		wantTrunc bool
	}{
		{"stdout and stderr merged", "echo out; echo err >&2", 0, "out\nerr\n", 0, false},
		{"exit code", "exit 3", 0, "", 3, false},
		{"cwd", "pwd", 0, dir + "\n", 0, false},
		{"stdin is empty", "cat; echo done", 0, "done\n", 0, false},
		{"tail kept", "printf 'aaaaabbbbb'", 5, "bbbbb", 0, true},
		{"tail at a rune boundary", "printf 'aé'", 2, "é", 0, true},
		{"cut multibyte head dropped", "printf 'aééé'", 5, "éé", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Commands{}.Run(context.Background(), workspace.Command{Command: tt.cmd, Cwd: dir, Timeout: 10 * time.Second, OutputLimit: tt.limit}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tt.wantOut || res.Truncated != tt.wantTrunc {
				t.Fatalf("output %q truncated %v; want %q %v", res.Output, res.Truncated, tt.wantOut, tt.wantTrunc)
			}
			if res.ExitCode == nil || *res.ExitCode != tt.wantCode || res.TimedOut {
				t.Fatalf("exit %v timedOut %v; want %d", res.ExitCode, res.TimedOut, tt.wantCode)
			}
		})
	}
}

// readPID waits for the command to have written a pid into file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the command did not record its background pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return pid
}

// A command that never ends is stopped by its timeout: the shell, a
// grandchild running in the background, and one that ignores SIGTERM
// are all gone when Run returns.
func TestCommandsTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	stubborn := filepath.Join(dir, "stubborn.pid")
	script := "sleep 1000 & echo $! > " + pidFile + "; " +
		"(trap '' TERM; echo $BASHPID > " + stubborn + "; while :; do sleep 0.05; done) & " +
		"echo started; while [ ! -s " + stubborn + " ]; do sleep 0.01; done; sleep 1000"
	res, err := Commands{KillGrace: 200 * time.Millisecond}.Run(context.Background(),
		workspace.Command{Command: script, Cwd: dir, Timeout: 3 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != nil || res.Signal == "" {
		t.Fatalf("result %+v: want timed out and killed by a signal", res)
	}
	if res.Output != "started\n" {
		t.Fatalf("output %q", res.Output)
	}
	for _, f := range []string{pidFile, stubborn} {
		if pid := readPID(t, f); !proctest.Gone(pid) {
			t.Errorf("background process %d (%s) still runs after the timeout", pid, filepath.Base(f))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestCommandsCancelKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var res workspace.CommandResult
	var err error
	go func() {
		defer close(done)
		res, err = Commands{KillGrace: 200 * time.Millisecond}.Run(ctx,
			workspace.Command{Command: "sleep 1000 & echo $! > " + pidFile + "; wait", Cwd: dir, Timeout: time.Minute}, nil)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if b, _ := os.ReadFile(pidFile); len(b) > 0 && strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if !errors.Is(err, context.Canceled) || res.TimedOut {
		t.Fatalf("err %v, result %+v: want context.Canceled", err, res)
	}
	if pid := readPID(t, pidFile); !proctest.Gone(pid) {
		t.Errorf("background process %d still runs after cancellation", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Background processes left by a command that exits normally are
// stopped, and their open pipe does not keep Run from returning.
func TestCommandsStopsLeftoverBackgroundProcesses(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	res, err := Commands{KillGrace: 200 * time.Millisecond}.Run(context.Background(),
		workspace.Command{Command: "sleep 1000 & echo $! > " + pidFile + "; echo hi", Cwd: dir, Timeout: time.Minute}, nil)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || res.Output != "hi\n" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if pid := readPID(t, pidFile); !proctest.Gone(pid) {
		t.Errorf("background process %d still runs", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestCommandsCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	marker := filepath.Join(t.TempDir(), "ran")
	if _, err := (Commands{}).Run(ctx, workspace.Command{Command: "touch " + marker, Cwd: filepath.Dir(marker)}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a cancelled command ran")
	}
}

func TestScriptedPermissions(t *testing.T) {
	s := &Scripted{Decide: func(r workspace.PermissionRequest) error {
		if r.Kind == workspace.KindExecute {
			return Reject(r)
		}
		return nil
	}}
	ctx := context.Background()
	if err := s.Authorize(ctx, workspace.PermissionRequest{Tool: "edit", Kind: workspace.KindEdit}); err != nil {
		t.Fatal(err)
	}
	if err := s.Authorize(ctx, workspace.PermissionRequest{Tool: "bash", Kind: workspace.KindExecute}); code(err) != workspace.CodePermissionRejected {
		t.Fatalf("err %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Authorize(cctx, workspace.PermissionRequest{Tool: "edit"}); code(err) != workspace.CodePermissionCancelled {
		t.Fatalf("cancelled: %v", err)
	}
	if n := len(s.Requests()); n != 3 {
		t.Fatalf("%d requests recorded", n)
	}
}
