package reaper

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The reaper is this test binary started again with argv[0] Arg: the
// package's init serves it before the tests run, as in the agent.

// started is a reaper process running a shell command.
type started struct {
	cmd    *exec.Cmd
	agent  *os.File      // write end of the agent pipe: closing it is the agent dying
	status *bufio.Reader // the reaper's status pipe
	lines  *bufio.Reader // the command's stdout
}

// startReaper runs sh -c command under the reaper with grace.
func startReaper(t *testing.T, command string, grace time.Duration) *started {
	t.Helper()
	return startReaperArgs(t, Args("test-marker", grace, "/bin/sh", []string{"sh", "-c", command}))
}

func startReaperArgs(t *testing.T, argv []string) *started {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agentR, agentW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: self, Args: argv, Stdout: outW, Stderr: os.Stderr, ExtraFiles: []*os.File{agentR, statusW}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	agentR.Close()
	statusW.Close()
	outW.Close()
	s := &started{cmd: cmd, agent: agentW, status: bufio.NewReader(statusR), lines: bufio.NewReader(outR)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		agentW.Close()
		statusR.Close()
		outR.Close()
	})
	return s
}

// line reads the command's next stdout line.
func (s *started) line(t *testing.T) string {
	t.Helper()
	l, err := s.lines.ReadString('\n')
	if err != nil {
		t.Fatalf("command output: %v (read %q)", err, l)
	}
	return strings.TrimSpace(l)
}

// pid reads a pid the command printed.
func (s *started) pid(t *testing.T) int {
	t.Helper()
	l := s.line(t)
	pid, err := strconv.Atoi(l)
	if err != nil {
		t.Fatalf("command printed %q, want a pid", l)
	}
	return pid
}

// wait waits for the reaper and returns its wait status, and whether it
// reported every descendant reaped on its status pipe.
func (s *started) wait(t *testing.T) (syscall.WaitStatus, bool) {
	t.Helper()
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	ws := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	got, _ := io.ReadAll(s.status)
	return ws, string(got) == Clean
}

// gone reports whether pid no longer runs: the reaper reaps what it
// kills, so a killed descendant leaves no zombie behind.
func gone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

func TestReaperExitStatus(t *testing.T) {
	tests := []struct {
		name    string
		command string
		code    int
		signal  syscall.Signal
	}{
		{"success", "true", 0, 0},
		{"exit code", "exit 3", 3, 0},
		{"high exit code", "exit 200", 200, 0},
		// The agent reads the shell's signal from the reaper's status.
		{"killed shell", "kill -KILL $$", 0, syscall.SIGKILL},
		{"terminated shell", "kill -TERM $$", 0, syscall.SIGTERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startReaper(t, tt.command, time.Minute)
			ws, clean := s.wait(t)
			if !clean {
				t.Error("no clean report on the status pipe")
			}
			if tt.signal != 0 {
				if !ws.Signaled() || ws.Signal() != tt.signal {
					t.Fatalf("reaper status %v, want killed by %v", ws, tt.signal)
				}
				if ws.CoreDump() {
					t.Error("the reaper dumped core mirroring the signal")
				}
				return
			}
			if !ws.Exited() || ws.ExitStatus() != tt.code {
				t.Fatalf("reaper status %v, want exit %d", ws, tt.code)
			}
		})
	}
}

func TestReaperRefusesWhatItCannotRun(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		code int
	}{
		{"no command", []string{Arg, "m", "1000"}, 126},
		{"missing program", Args("m", time.Second, "/nonexistent/program", []string{"program"}), 127},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startReaperArgs(t, tt.argv)
			ws, _ := s.wait(t)
			if !ws.Exited() || ws.ExitStatus() != tt.code {
				t.Fatalf("reaper status %v, want exit %d", ws, tt.code)
			}
		})
	}
}

// What the shell leaves running when it exits is stopped, whatever it did
// to get away (its own session, a double fork), and the shell's status is
// the reaper's.
func TestReaperStopsWhatTheShellLeft(t *testing.T) {
	tests := []struct {
		name    string
		command string
	}{
		{"background child", "sleep 60 & echo $!; exit 5"},
		{"own session", "setsid sleep 60 & echo $!; exit 5"},
		{"double fork", "sh -c 'sleep 60 & echo $!' ; exit 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startReaper(t, tt.command, 50*time.Millisecond)
			left := s.pid(t)
			ws, clean := s.wait(t)
			if !ws.Exited() || ws.ExitStatus() != 5 {
				t.Errorf("reaper status %v, want the shell's exit 5", ws)
			}
			if !clean {
				t.Error("no clean report on the status pipe")
			}
			if !gone(left) {
				_ = syscall.Kill(left, syscall.SIGKILL)
				t.Fatalf("pid %d outlived the reaper", left)
			}
		})
	}
}

// SIGTERM from the agent reaches every descendant; one that ignores it is
// killed after the grace.
func TestReaperTermThenKill(t *testing.T) {
	t.Run("handled", func(t *testing.T) {
		s := startReaper(t, "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done", time.Minute)
		if s.line(t) != "ready" {
			t.Fatal("no ready line")
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		ws, clean := s.wait(t)
		if !ws.Exited() || ws.ExitStatus() != 7 {
			t.Fatalf("reaper status %v, want the shell's exit 7 from its TERM trap", ws)
		}
		if !clean {
			t.Error("no clean report on the status pipe")
		}
	})
	t.Run("ignored", func(t *testing.T) {
		s := startReaper(t, "trap '' TERM; echo ready; sleep 60 & echo $!; wait", 100*time.Millisecond)
		if s.line(t) != "ready" {
			t.Fatal("no ready line")
		}
		sleep := s.pid(t)
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		ws, _ := s.wait(t)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("reaper status %v, want the shell's SIGKILL after the grace", ws)
		}
		if !gone(sleep) {
			_ = syscall.Kill(sleep, syscall.SIGKILL)
			t.Fatalf("the sleep (pid %d) ignoring SIGTERM outlived the grace", sleep)
		}
	})
}

// The agent dying (its pipe reaching EOF) kills the command at once, with
// no grace: the grace here is longer than any test may run.
func TestReaperKillsWhenTheAgentDies(t *testing.T) {
	s := startReaper(t, "trap '' TERM; sleep 600 & echo $!; wait", time.Hour)
	sleep := s.pid(t)
	s.agent.Close()
	ws, clean := s.wait(t)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("reaper status %v, want the shell's SIGKILL", ws)
	}
	if !clean {
		t.Error("no clean report on the status pipe")
	}
	if !gone(sleep) {
		_ = syscall.Kill(sleep, syscall.SIGKILL)
		t.Fatalf("the sleep (pid %d) outlived the agent", sleep)
	}
}

func TestDescendantsAndStat(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & echo $!; sh -c 'sleep 60 & echo $!; wait' & wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range Descendants(cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	r := bufio.NewReader(out)
	var want []int
	for range 2 {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(l))
		want = append(want, pid)
	}
	got := Descendants(cmd.Process.Pid)
	for _, pid := range want {
		found := false
		for _, g := range got {
			found = found || g == pid
		}
		if !found {
			t.Errorf("Descendants(%d) = %v, missing %d (a child or a grandchild)", cmd.Process.Pid, got, pid)
		}
		f, ok := Stat(strconv.Itoa(pid))
		if !ok || len(f) < 2 {
			t.Fatalf("Stat(%d) = %v, %v", pid, f, ok)
		}
	}
	if d := Descendants(want[0]); len(d) != 0 {
		t.Errorf("a sleep has descendants %v", d)
	}
	f, ok := Stat(strconv.Itoa(os.Getpid()))
	if !ok || f[1] != strconv.Itoa(os.Getppid()) {
		t.Errorf("Stat(self) = %v, %v; want the parent %d second", f, ok, os.Getppid())
	}
	if _, ok := Stat("0"); ok {
		t.Error("Stat of pid 0 succeeded")
	}
}

func TestArgs(t *testing.T) {
	got := Args("mark", 3*time.Second, "/bin/sh", []string{"sh", "-c", "x"})
	want := []string{Arg, "mark", "3000000000", "/bin/sh", "sh", "-c", "x"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("Args = %q, want %q", got, want)
	}
}

// The command gets the argv it was given, verbatim (no shell between),
// and the reaper's environment and stdout.
func TestReaperPassesArgvAndEnvironment(t *testing.T) {
	t.Setenv("REAPER_TEST_VALUE", "from the agent")
	s := startReaperArgs(t, Args("m", time.Second, "/bin/sh", []string{"sh", "-c", `printf '%s|%s|%s\n' "$0" "$1" "$REAPER_TEST_VALUE"`, "zero", "one two"}))
	if got := s.line(t); got != "zero|one two|from the agent" {
		t.Errorf("the command printed %q", got)
	}
	if ws, clean := s.wait(t); !ws.Exited() || ws.ExitStatus() != 0 || !clean {
		t.Errorf("reaper status %v, clean %v", ws, clean)
	}
}

// A process that is gone has no descendants.
func TestDescendantsOfAGoneProcess(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if d := Descendants(cmd.Process.Pid); len(d) != 0 {
		t.Errorf("Descendants of reaped pid %d = %v", cmd.Process.Pid, d)
	}
}
