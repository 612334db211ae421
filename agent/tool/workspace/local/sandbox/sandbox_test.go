package sandbox_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/internal/ownpaths"
)

func TestMain(m *testing.M) {
	sandbox.Main() // serves the re-executed helper
	if p := os.Getenv(connectEnv); p != "" {
		// Re-executed in the sandbox to try a UNIX socket.
		c, err := net.Dial("unix", p)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	if os.Getenv(ioURingEnv) != "" {
		// Re-executed, in the sandbox or not, to try to set up io_uring.
		var params [120]byte                                                            // struct io_uring_params
		fd, _, errno := syscall.RawSyscall(425, 4, uintptr(unsafe.Pointer(&params)), 0) // io_uring_setup: 425 on amd64 and arm64
		if errno != 0 {
			fmt.Println("io_uring_setup:", errno.Error())
			os.Exit(3)
		}
		syscall.Close(int(fd))
		fmt.Println("io_uring ready")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	connectEnv = "ACP_AGENT_TEST_CONNECT_UNIX"
	ioURingEnv = "ACP_AGENT_TEST_IO_URING"
)

// TestNoIOURing: io_uring's IORING_OP_SOCKET and IORING_OP_CONNECT make a
// UNIX socket and connect it without a socket(2) the seccomp filter sees,
// so a sandboxed command cannot set up io_uring at all (EPERM). Skipped,
// with the reason, where the kernel has no io_uring for the unsandboxed
// control either.
func TestNoIOURing(t *testing.T) {
	requireLandlock(t)
	l := newLayout(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	try := func(sb *sandbox.Sandbox) (string, error) {
		cmd := exec.Command(exe)
		cmd.Dir = l.cwd
		cmd.Env = append(os.Environ(), ioURingEnv+"=1")
		if sb != nil {
			if _, err := sb.Prepare(cmd); err != nil {
				t.Fatal(err)
			}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := try(nil); err != nil || !strings.Contains(out, "io_uring ready") {
		t.Skipf("this kernel gives no io_uring even outside the sandbox (%v: %s): nothing to refuse here", err, strings.TrimSpace(out))
	}
	for _, network := range []bool{false, true} {
		sb := sandbox.New(sandbox.Policy{TempDir: l.tmp, Network: network}, sandbox.Options{})
		out, err := try(sb)
		if err == nil || !strings.Contains(out, "io_uring_setup: operation not permitted") {
			t.Errorf("network=%v: the sandboxed command set up io_uring: %v %s", network, err, out)
		}
	}
}

// TestNoUnixSocketOutside: a sandboxed command cannot connect to a UNIX
// socket listening outside its writable directories (the session bus,
// docker.sock, the ssh agent); unsandboxed, the same connect works.
func TestNoUnixSocketOutside(t *testing.T) {
	requireLandlock(t)
	l := newLayout(t)
	sock := filepath.Join(l.outside, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	try := func(sb *sandbox.Sandbox) (string, error) {
		cmd := exec.Command(exe)
		cmd.Dir = l.cwd
		cmd.Env = append(os.Environ(), connectEnv+"="+sock)
		if sb != nil {
			if _, err := sb.Prepare(cmd); err != nil {
				t.Fatal(err)
			}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := try(nil); err != nil || !strings.Contains(out, "connected") {
		t.Fatalf("unsandboxed connect failed: %v %s", err, out)
	}
	for _, network := range []bool{false, true} {
		sb := sandbox.New(sandbox.Policy{TempDir: l.tmp, Network: network}, sandbox.Options{})
		out, err := try(sb)
		if err == nil || !strings.Contains(out, "refused:") {
			t.Errorf("network=%v: the sandboxed command reached the socket: %v %s", network, err, out)
		}
	}
}

// requireLandlock skips, saying why, where the kernel has no Landlock.
func requireLandlock(t *testing.T) sandbox.Support {
	t.Helper()
	s := sandbox.ProbeKernel()
	if s.ABI < 1 {
		t.Skip("this kernel has no Landlock: the sandbox cannot be tested here")
	}
	return s
}

// layout is a base dir with a cwd, a temp dir and an outside dir, none
// inside another, so the system temp dir (writable in the sandbox) does
// not cover the outside dir.
type layout struct{ cwd, tmp, outside string }

func newLayout(t *testing.T) layout {
	base := t.TempDir()
	l := layout{filepath.Join(base, "work"), filepath.Join(base, "tmp"), filepath.Join(base, "outside")}
	for _, d := range []string{l.cwd, l.tmp, l.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func run(t *testing.T, sb *sandbox.Sandbox, cwd, script string) (string, int) {
	t.Helper()
	out, code, _ := runGuarded(t, sb, cwd, script)
	return out, code
}

// runGuarded runs script in the sandbox and then the guard's check,
// returning what it moved aside.
func runGuarded(t *testing.T, sb *sandbox.Sandbox, cwd, script string) (string, int, []sandbox.Moved) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g, err := sb.Prepare(cmd)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run %q: %v", script, err)
	}
	moved, err := g.Check()
	if err != nil {
		t.Fatalf("guard check after %q: %v", script, err)
	}
	return string(out), code, moved
}

func TestSandboxedFiles(t *testing.T) {
	requireLandlock(t)
	l := newLayout(t)
	extra := filepath.Join(filepath.Dir(l.cwd), "extra")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New(sandbox.Policy{TempDir: l.tmp, Writable: []string{"../extra"}}, sandbox.Options{})
	if err := os.WriteFile(filepath.Join(l.outside, "secret.txt"), []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		script  string
		wantOK  bool
		created string // a path that must exist afterwards, or must not when !wantOK
	}{
		{"write in the cwd", "echo hi > made.txt && mkdir -p sub && mv made.txt sub/made.txt", true, filepath.Join(l.cwd, "sub", "made.txt")},
		{"write in the temp dir", fmt.Sprintf("touch %s/t.txt", l.tmp), true, filepath.Join(l.tmp, "t.txt")},
		{"write in a configured dir", "touch ../extra/e.txt", true, filepath.Join(extra, "e.txt")},
		{"read outside", "cat ../outside/secret.txt", true, ""},
		{"touch a new file in the parent", "touch ../outside.txt", false, filepath.Join(filepath.Dir(l.cwd), "outside.txt")},
		{"create outside", "touch ../outside/new.txt", false, filepath.Join(l.outside, "new.txt")},
		{"overwrite outside", "echo x > ../outside/secret.txt", false, ""},
		{"write to /dev/null", "echo gone > /dev/null", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := run(t, sb, l.cwd, tt.script)
			if ok := code == 0; ok != tt.wantOK {
				t.Fatalf("exit %d, want success %v; output:\n%s", code, tt.wantOK, out)
			}
			if !tt.wantOK && !strings.Contains(out, "Permission denied") {
				t.Errorf("output does not say the write was denied:\n%s", out)
			}
			if tt.created != "" {
				_, err := os.Stat(tt.created)
				if exists := err == nil; exists != tt.wantOK {
					t.Errorf("%s exists = %v, want %v", tt.created, exists, tt.wantOK)
				}
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(l.outside, "secret.txt")); string(b) != "readable\n" {
		t.Errorf("outside file changed: %q", b)
	}
}

func TestSandboxedNetwork(t *testing.T) {
	support := requireLandlock(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	dial := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
	tests := []struct {
		name    string
		policy  sandbox.Policy
		probe   func() sandbox.Support
		connect bool
		skip    string
	}{
		{name: "network allowed", policy: sandbox.Policy{Network: true}, connect: true},
		{name: "network cut", connect: false},
		{name: "TCP cut by Landlock alone", probe: func() sandbox.Support { return sandbox.Support{ABI: support.ABI} },
			connect: false, skip: map[bool]string{true: "Landlock ABI below 4 has no TCP rules"}[support.ABI < 4]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			l := newLayout(t)
			tt.policy.TempDir = l.tmp
			sb := sandbox.New(tt.policy, sandbox.Options{Probe: tt.probe})
			out, code := run(t, sb, l.cwd, dial)
			if connected := code == 0 && strings.Contains(out, "connected"); connected != tt.connect {
				t.Fatalf("connected = %v, want %v (exit %d):\n%s", connected, tt.connect, code, out)
			}
		})
	}
}

func TestSandboxRefusedWithoutKernelSupport(t *testing.T) {
	tests := []struct {
		name    string
		policy  sandbox.Policy
		support sandbox.Support
		want    string
	}{
		{"no Landlock", sandbox.Policy{Network: true}, sandbox.Support{ABI: 0, NetNS: true}, "no Landlock"},
		{"network cannot be cut", sandbox.Policy{}, sandbox.Support{ABI: 3}, "can cut neither the network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := sandbox.New(tt.policy, sandbox.Options{Probe: func() sandbox.Support { return tt.support }})
			cmd := exec.Command("bash", "-c", "true")
			cmd.Dir = t.TempDir()
			_, err := sb.Prepare(cmd)
			if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Prepare = %v, want ErrUnavailable saying %q", err, tt.want)
			}
			if filepath.Base(cmd.Path) != "bash" {
				t.Errorf("a refused command was rewritten to %s", cmd.Path)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		support sandbox.Support
		want    string
	}{
		{sandbox.Support{ABI: 7, NetNS: true, MountNS: true},
			"sandboxed: writes only under /work/p, /tmp, /cache, /work/p/build (.git, .acp-agent, .vscode, .zed and .idea there read-only, and moved aside when the command creates them); no network; no UNIX sockets"},
		{sandbox.Support{ABI: 7, NetNS: true},
			"sandboxed: writes only under /work/p, /tmp, /cache, /work/p/build (.git and the editors' task files there are writable: this kernel allows no mount namespace); no network; no UNIX sockets"},
		{sandbox.Support{ABI: 7},
			"sandboxed: writes only under /work/p, /tmp, /cache, /work/p/build (.git and the editors' task files there are writable: this kernel allows no mount namespace); no TCP, but UDP and other protocols stay open (this kernel allows no network namespace); no UNIX sockets"},
	} {
		sb := sandbox.New(sandbox.Policy{TempDir: "/tmp", Writable: []string{"/cache", "build"}},
			sandbox.Options{Probe: func() sandbox.Support { return tt.support }})
		if got := sb.Describe("/work/p"); got != tt.want {
			t.Errorf("Describe = %q, want %q", got, tt.want)
		}
	}
}

// TestProtectedPathsReadOnly: a sandboxed command cannot set
// core.fsmonitor in .git/config, plant a hook in a nested repository's
// .git, or write the editors' task files, the agent's project settings or
// a configured protected file; it still writes the rest of its cwd.
func TestProtectedPathsReadOnly(t *testing.T) {
	s := requireLandlock(t)
	if !s.MountNS {
		t.Skip("this kernel allows no unprivileged mount namespace: the sandbox cannot keep protected paths read-only here (accept-edits asks before sandboxed commands instead)")
	}
	l := newLayout(t)
	for _, d := range []string{".git/hooks", "sub/x/.git/hooks", ".vscode", ".acp-agent", ".idea", "own",
		".claude/agents", ".config/acp-agent/agents", ".github/agents", ".codex", ".gemini", ".cursor", ".agents/skills", ".opencode"} {
		if err := os.MkdirAll(filepath.Join(l.cwd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	own := filepath.Join(l.cwd, "own", "settings.json")
	for _, f := range []string{".git/config", own} {
		p := f
		if !filepath.IsAbs(p) {
			p = filepath.Join(l.cwd, f)
		}
		if err := os.WriteFile(p, []byte("[core]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb := sandbox.New(sandbox.Policy{TempDir: l.tmp, Protected: []string{own}}, sandbox.Options{})
	for _, script := range []string{
		"echo '  fsmonitor = evil' >> .git/config",
		"echo evil > .git/hooks/pre-commit",
		"echo evil > sub/x/.git/hooks/pre-commit",
		"echo '{}' > .vscode/tasks.json",
		"echo '{}' > .acp-agent/settings.json",
		"echo x > .idea/workspace.xml",
		"echo '{}' > " + own,
		// Issue 51: agent definitions and skills of every format, and
		// other agents' command-running config.
		"echo x > .claude/agents/helper.md",
		"echo '{}' > .claude/settings.json",
		"echo x > .config/acp-agent/agents/helper.md",
		"echo x > .github/agents/a.md",
		"echo x > .codex/config.toml",
		"echo '{}' > .gemini/settings.json",
		"echo '{}' > .cursor/mcp.json",
		"mkdir .agents/skills/s",
		"echo x > .opencode/x",
	} {
		if out, code := run(t, sb, l.cwd, script); code == 0 {
			t.Errorf("%q succeeded in the sandbox: %s", script, out)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(l.cwd, ".git", "config")); string(data) != "[core]\n" {
		t.Errorf(".git/config changed: %q", data)
	}
	if out, code := run(t, sb, l.cwd, "echo ok > made.txt && mkdir -p src && echo ok > src/a && mkdir -p .github/workflows && echo x > .github/workflows/ci.yml"); code != 0 {
		t.Errorf("a write in the cwd failed: %d %s", code, out)
	}
}

// BenchmarkStart compares starting `bash -c true` directly and through
// the sandbox helper (re-exec, Landlock, user and network namespaces).
func BenchmarkStart(b *testing.B) {
	if sandbox.ProbeKernel().ABI < 1 {
		b.Skip("this kernel has no Landlock")
	}
	dir := b.TempDir()
	for _, tc := range []struct {
		name string
		sb   *sandbox.Sandbox
	}{
		{"plain", nil},
		{"sandboxed", sandbox.New(sandbox.Policy{}, sandbox.Options{})},
		{"sandboxed, network allowed", sandbox.New(sandbox.Policy{Network: true}, sandbox.Options{})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("bash", "-c", "true")
				cmd.Dir = dir
				if tc.sb != nil {
					if _, err := tc.sb.Prepare(cmd); err != nil {
						b.Fatal(err)
					}
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// requireMountNS skips, saying why, where the sandbox cannot keep
// protected paths.
func requireMountNS(t *testing.T) {
	t.Helper()
	if s := requireLandlock(t); !s.MountNS {
		t.Skip("this kernel allows no unprivileged mount namespace: the sandbox cannot keep protected paths here (accept-edits asks before sandboxed commands instead)")
	}
}

// TestNewProtectedPathsMovedAside: a protected path that did not exist
// when a sandboxed command started, and that the command creates (git
// init, an editor's task file, the agent's project settings, a nested
// repository, a .git file or symlink pointing at a planted git
// directory, a configured protected file), is moved aside once the
// command is over, with nothing left at its name; ordinary files the
// command wrote stay, and so does a protected path that existed before
// and was only renamed with its parent.
func TestNewProtectedPathsMovedAside(t *testing.T) {
	requireMountNS(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	tests := []struct {
		name   string
		setup  []string // directories made before the command, under the cwd
		script string
		moved  []string // paths under the cwd moved aside
		kept   []string // paths under the cwd that must still be there
	}{
		{name: "git init", script: gitPath + " init --quiet && " + gitPath + " config core.fsmonitor /tmp/evil && touch made.txt",
			moved: []string{".git"}, kept: []string{"made.txt"}},
		{name: "a new .vscode/tasks.json", script: "mkdir .vscode && echo '{}' > .vscode/tasks.json",
			moved: []string{".vscode"}},
		{name: "the agent's project settings", script: "mkdir .acp-agent && echo '{\"allow\":[\"bash\"]}' > .acp-agent/settings.json",
			moved: []string{".acp-agent"}},
		{name: "zed and idea", script: "mkdir .zed .idea && touch .zed/tasks.json .idea/workspace.xml",
			moved: []string{".idea", ".zed"}}, // in walk order
		{name: "a nested repository", setup: []string{"sub/x"}, script: "cd sub/x && " + gitPath + " init --quiet",
			moved: []string{"sub/x/.git"}},
		{name: "a .git file pointing elsewhere", script: "echo 'gitdir: /tmp/planted' > .git", moved: []string{".git"}},
		{name: "a .git symlink", script: "ln -s /tmp/planted .git", moved: []string{".git"}},
		{name: "a repository created by a rename", script: "mkdir g && mv g .git", moved: []string{".git"}},
		{name: "an existing .git renamed with its parent", setup: []string{"old/.git"}, script: "mv old new",
			kept: []string{"new/.git"}},
		{name: "a configured protected file", setup: []string{"own"}, script: "echo '{}' > own/settings.json",
			moved: []string{"own/settings.json"}},
		// Issue 51: a self-granted agent definition or another agent's
		// command-running config made by a sandboxed command.
		{name: "our user agent folder", setup: []string{".config"}, script: "mkdir -p .config/acp-agent/agents && echo x > .config/acp-agent/agents/helper.md",
			moved: []string{".config/acp-agent"}},
		{name: "claude's folder", script: "mkdir -p .claude/agents && echo x > .claude/agents/helper.md", moved: []string{".claude"}},
		{name: "an MCP server list", script: "echo '{}' > .mcp.json", moved: []string{".mcp.json"}},
		{name: "github agents", setup: []string{".github/workflows"}, script: "mkdir .github/agents && echo x > .github/agents/a.md",
			moved: []string{".github/agents"}, kept: []string{".github/workflows"}},
		{name: "ordinary writes", script: "mkdir -p src/git && touch src/.gitignore .gitattributes", kept: []string{"src/git", "src/.gitignore", ".gitattributes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			for _, d := range tt.setup {
				if err := os.MkdirAll(filepath.Join(l.cwd, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			own := filepath.Join(l.cwd, "own", "settings.json")
			sb := sandbox.New(sandbox.Policy{TempDir: l.tmp, Protected: []string{own}}, sandbox.Options{})
			out, code, moved := runGuarded(t, sb, l.cwd, tt.script)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			var got []string
			for _, m := range moved {
				rel, _ := filepath.Rel(l.cwd, m.Path)
				got = append(got, rel)
				if m.To != m.Path+sandbox.QuarantineSuffix {
					t.Errorf("%s moved to %s, want %s", m.Path, m.To, m.Path+sandbox.QuarantineSuffix)
				}
				if _, err := os.Lstat(m.To); err != nil {
					t.Errorf("nothing at the quarantine name: %v", err)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.moved, ",") {
				t.Errorf("moved %q, want %q", got, tt.moved)
			}
			for _, p := range tt.moved {
				if _, err := os.Lstat(filepath.Join(l.cwd, p)); err == nil {
					t.Errorf("%s is still there", p)
				}
			}
			for _, p := range tt.kept {
				if _, err := os.Lstat(filepath.Join(l.cwd, p)); err != nil {
					t.Errorf("%s was not kept: %v", p, err)
				}
			}
		})
	}
}

// TestQuarantineNameTaken: a second git init finds the first
// quarantine name taken and uses the next one, leaving the first alone.
func TestQuarantineNameTaken(t *testing.T) {
	requireMountNS(t)
	l := newLayout(t)
	sb := sandbox.New(sandbox.Policy{TempDir: l.tmp}, sandbox.Options{})
	var tos []string
	for i := range 2 {
		_, code, moved := runGuarded(t, sb, l.cwd, fmt.Sprintf("mkdir .vscode && echo %d > .vscode/tasks.json", i))
		if code != 0 || len(moved) != 1 {
			t.Fatalf("run %d: exit %d, moved %v", i, code, moved)
		}
		tos = append(tos, moved[0].To)
	}
	want := filepath.Join(l.cwd, ".vscode"+sandbox.QuarantineSuffix)
	if tos[0] != want || tos[1] != want+"-2" {
		t.Fatalf("moved to %q, want %s and its -2", tos, want)
	}
	for i, to := range tos {
		if b, _ := os.ReadFile(filepath.Join(to, "tasks.json")); string(b) != fmt.Sprintf("%d\n", i) {
			t.Errorf("%s holds %q", to, b)
		}
	}
}

// TestTempDirNotGuarded: the temp dir is shared with every program of
// the user, so a repository made there is not taken for the command's
// and is left where it is (existing ones there are still read-only).
func TestTempDirNotGuarded(t *testing.T) {
	requireMountNS(t)
	l := newLayout(t)
	sb := sandbox.New(sandbox.Policy{TempDir: l.tmp}, sandbox.Options{})
	_, code, moved := runGuarded(t, sb, l.cwd, "mkdir -p "+l.tmp+"/r/.git && touch "+l.tmp+"/r/.git/config")
	if code != 0 || len(moved) != 0 {
		t.Fatalf("exit %d, moved %v", code, moved)
	}
	if _, err := os.Stat(filepath.Join(l.tmp, "r", ".git", "config")); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGuard measures what keeping the protected paths costs per
// command in a project of n entries (a .git every 100 directories):
// Prepare's walk that finds the paths to bind read-only, and the guard's
// second walk once the command is over.
func BenchmarkGuard(b *testing.B) {
	if s := sandbox.ProbeKernel(); s.ABI < 1 || !s.MountNS {
		b.Skip("this kernel cannot keep protected paths")
	}
	for _, n := range []int{10_000, 100_000} {
		dir := b.TempDir()
		for d := 0; d < n/10; d++ {
			sub := filepath.Join(dir, fmt.Sprintf("d%03d", d/100), fmt.Sprintf("e%03d", d%100))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			if d%100 == 0 {
				if err := os.Mkdir(filepath.Join(sub, ".git"), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			for f := 0; f < 9; f++ {
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", f)), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		sb := sandbox.New(sandbox.Policy{TempDir: b.TempDir()}, sandbox.Options{})
		prepare := func() *sandbox.Guard {
			cmd := exec.Command("true")
			cmd.Dir = dir
			g, err := sb.Prepare(cmd)
			if err != nil {
				b.Fatal(err)
			}
			return g
		}
		b.Run(fmt.Sprintf("prepare/%d", n), func(b *testing.B) {
			for b.Loop() {
				prepare()
			}
		})
		g := prepare()
		b.Run(fmt.Sprintf("check/%d", n), func(b *testing.B) {
			for b.Loop() {
				if moved, err := g.Check(); err != nil || len(moved) != 0 {
					b.Fatal(moved, err)
				}
			}
		})
	}
}

// TestWatchMovesAsideWhileRunning: a protected path created at the top
// of the cwd (by mkdir or by a rename) is moved aside while the command
// still runs, so an editor watching the folder does not find it for the
// length of a long command; the command sees it go. The script waits for
// that (bounded, so a broken watch fails instead of hanging).
func TestWatchMovesAsideWhileRunning(t *testing.T) {
	requireMountNS(t)
	for _, script := range []string{
		"mkdir .vscode && echo '{}' > .vscode/tasks.json",
		"mkdir g && mv g .git",
	} {
		t.Run(script, func(t *testing.T) {
			l := newLayout(t)
			sb := sandbox.New(sandbox.Policy{TempDir: l.tmp}, sandbox.Options{})
			name := ".vscode"
			if strings.HasSuffix(script, ".git") {
				name = ".git"
			}
			wait := script + "; for i in $(seq 3000); do [ -e " + name + " ] || { echo gone; exit 0; }; sleep 0.01; done; echo still there"
			cmd := exec.Command("bash", "-c", wait)
			cmd.Dir = l.cwd
			g, err := sb.Prepare(cmd)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			stop := g.Watch()
			if err := cmd.Start(); err != nil {
				stop()
				t.Fatal(err)
			}
			err = cmd.Wait()
			stop()
			// The write into .vscode may already find it gone.
			if err != nil || !strings.HasSuffix(strings.TrimSpace(out.String()), "gone") {
				t.Fatalf("the command saw %q (%v), want the path gone while it ran", out.String(), err)
			}
			moved, err := g.Check()
			if err != nil || len(moved) != 1 || moved[0].Path != filepath.Join(l.cwd, name) {
				t.Fatalf("moved %v, %v", moved, err)
			}
		})
	}
}

// TestAgentsOwnPathsKept: a protected path the agent itself creates while
// a sandboxed command runs (a subagent's worktree folder, .acp-agent/,
// claimed through internal/ownpaths) is not taken for the command's; the
// same folder made unclaimed is moved aside, so the claim is what keeps it.
func TestAgentsOwnPathsKept(t *testing.T) {
	requireMountNS(t)
	for _, claimed := range []bool{true, false} {
		t.Run(fmt.Sprintf("claimed=%v", claimed), func(t *testing.T) {
			l := newLayout(t)
			sb := sandbox.New(sandbox.Policy{TempDir: l.tmp}, sandbox.Options{})
			script := "touch started; for i in $(seq 3000); do [ -e agent-done ] && exit 0; sleep 0.01; done; exit 9"
			cmd := exec.Command("bash", "-c", script)
			cmd.Dir = l.cwd
			g, err := sb.Prepare(cmd)
			if err != nil {
				t.Fatal(err)
			}
			stop := g.Watch()
			if err := cmd.Start(); err != nil {
				stop()
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				if _, err := os.Stat(filepath.Join(l.cwd, "started")); err == nil {
					break
				}
				if i > 3000 {
					t.Fatal("the command did not start")
				}
				time.Sleep(10 * time.Millisecond)
			}
			dir := filepath.Join(l.cwd, ".acp-agent")
			end := func(bool) {}
			if claimed {
				end = ownpaths.Begin(dir)
			}
			mkErr := os.Mkdir(dir, 0o755)
			end(mkErr == nil)
			if mkErr != nil {
				t.Fatal(mkErr)
			}
			if err := os.WriteFile(filepath.Join(l.cwd, "agent-done"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			stop()
			if err != nil {
				t.Fatalf("command: %v", err)
			}
			moved, err := g.Check()
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(dir)
			if claimed && (len(moved) != 0 || statErr != nil) {
				t.Fatalf("the agent's own .acp-agent was moved aside: %v (%v)", moved, statErr)
			}
			if !claimed && (len(moved) != 1 || statErr == nil) {
				t.Fatalf("an unclaimed .acp-agent was kept: moved %v", moved)
			}
		})
	}
}

// TestSharedPlacesKept: /dev/shm is shared with every program of the
// user, so a sandboxed command gets a private one (what it writes there
// is not seen outside); a hard link inside the cwd to a file outside is
// read-only (Landlock checks the name used, and this name is inside).
func TestSharedPlacesKept(t *testing.T) {
	requireMountNS(t)
	l := newLayout(t)
	sb := sandbox.New(sandbox.Policy{TempDir: l.tmp}, sandbox.Options{})
	shm := fmt.Sprintf("/dev/shm/acp-agent-test-%d", time.Now().UnixNano())
	t.Cleanup(func() { os.Remove(shm) })
	if out, code := run(t, sb, l.cwd, "echo x > "+shm+" && cat "+shm); code != 0 {
		t.Fatalf("a private /dev/shm is not writable to the command: %d %s", code, out)
	}
	if _, err := os.Stat(shm); err == nil {
		t.Fatal("the command wrote the shared /dev/shm")
	}

	outside := filepath.Join(l.outside, "secret.txt")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(l.cwd, "linked.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	for _, script := range []string{"echo evil >> linked.txt", "echo evil > linked.txt", "truncate -s 0 linked.txt"} {
		if out, code := run(t, sb, l.cwd, script); code == 0 {
			t.Errorf("%q succeeded through a hard link to an outside file: %s", script, out)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside\n" {
		t.Fatalf("the outside file changed through its hard link: %q", b)
	}
	if out, code := run(t, sb, l.cwd, "echo ok > own.txt && cat linked.txt"); code != 0 || !strings.Contains(out, "outside") {
		t.Fatalf("ordinary writes and reads: %d %s", code, out)
	}
}
