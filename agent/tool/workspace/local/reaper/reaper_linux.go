package reaper

// This file is the reaper: the process each local command runs under.
// The agent starts this executable again (/proc/self/exe) as the leader
// of the command's process group; it makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), so every process the command starts stays
// its descendant whatever it does (setsid, a double fork, `env -i`): an
// orphan re-parents to the reaper, not to init. It starts the command,
// and when the command's shell exits, or the agent asks (SIGTERM), or
// the agent dies (the pipe from it reaches EOF), it kills all its
// descendants — SIGTERM, then SIGKILL after the grace — reaps them, and
// exits with the shell's status. Being the parent of all of them, it may
// wait for any child (wait4(-1)): nothing else in it waits.
//
// Why a process of its own rather than the agent as the subreaper: the
// agent is dead when its commands must be killed most (kill -9, OOM),
// and what re-parents to a dead subreaper goes to init, out of reach;
// orphans re-parented to a live agent could not be told apart between
// two commands running at once, nor reaped without stealing the exit
// status os/exec waits for.

import (
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Arg is argv[0] of the reaper (the name the watchdog had, which ps
// shows).
const Arg = "acp-agent-watchdog"

// Clean is what the reaper writes on its status pipe once every
// descendant is reaped: the agent then has nothing left to sweep.
const Clean = "clean\n"

// Fds the reaper gets from the agent: the read end of a pipe whose write
// end the agent holds while the command runs (ExtraFiles[0]), and the
// write end of the status pipe (ExtraFiles[1]).
const (
	reaperAgentFD  = 3
	reaperStatusFD = 4
)

// defaultGrace is the grace when the argv gives none.
const defaultGrace = 2 * time.Second

func init() {
	// The agent starts this executable as the reaper of a command: serve
	// it before anything else runs. This package imports almost nothing,
	// so its init runs before the heavy ones of the rest of the binary.
	if len(os.Args) > 1 && os.Args[0] == Arg && os.Args[1] == ServeArg {
		os.Exit(runServer(os.Args[1:]))
	}
	if len(os.Args) > 0 && os.Args[0] == Arg {
		os.Exit(runReaper(os.Args[1:]))
	}
}

// Args is the argv of the reaper running argv (path first) for the
// command marked marker, with grace between SIGTERM and SIGKILL.
func Args(marker string, grace time.Duration, path string, argv []string) []string {
	return append([]string{Arg, marker, strconv.FormatInt(int64(grace), 10), path}, argv...)
}

// runReaper serves the reaper's argv (after argv[0]): marker (for ps and
// the tests only), grace in nanoseconds, path, argv. It returns the exit
// status, or does not return when it mirrors a signal.
func runReaper(args []string) int {
	if len(args) < 4 {
		os.Stderr.WriteString("acp-agent watchdog: started without a command\n")
		return 126
	}
	grace, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || grace <= 0 {
		grace = int64(defaultGrace)
	}
	path, argv := args[2], args[3:]
	syscall.CloseOnExec(reaperAgentFD)
	syscall.CloseOnExec(reaperStatusFD)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		os.Stderr.WriteString("acp-agent watchdog: become a subreaper: " + err.Error() + "\n")
		return 126
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	// In a cgroup of its own where it can have one, before anything of
	// the command exists: everything it starts is in it.
	cgroup := CgroupPath(args[0])
	if !enterCgroup(cgroup) {
		cgroup = ""
	}

	// Pdeathsig fires when the forking thread ends: keep it for good.
	runtime.LockOSThread()
	shell, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// A reaper killed outright takes its shell with it.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		if cgroup != "" {
			leaveCgroup(cgroup, time.Duration(grace))
		}
		os.Stderr.WriteString("acp-agent: " + path + ": " + err.Error() + "\n")
		return 127
	}

	status, shellDone := supervise(shell, time.Duration(grace), term)
	if cgroup != "" {
		// What left the tree is still in the cgroup: killed with it.
		leaveCgroup(cgroup, time.Duration(grace))
	}
	_, _ = os.NewFile(reaperStatusFD, "status").WriteString(Clean)
	if !shellDone {
		return 126
	}
	if status.Signaled() {
		// The agent reads the shell's signal from this process's status.
		raiseDefault(status.Signal())
		return 128 + int(status.Signal()) // a signal whose default is to go on
	}
	return status.ExitStatus()
}

// reaped is one child waited for.
type reaped struct {
	pid int
	ws  syscall.WaitStatus
}

// supervise waits for every child of this process until none is left,
// killing the descendants when the shell ends and leaves some behind,
// when term delivers a signal (SIGTERM first, SIGKILL after grace) or
// when the agent is gone (SIGKILL at once). It returns the shell's
// status, and whether the shell was reaped.
func supervise(shell int, grace time.Duration, term <-chan os.Signal) (status syscall.WaitStatus, shellDone bool) {
	reapedc := make(chan reaped, 64)
	noChildren := make(chan struct{})
	go reapAll(reapedc, noChildren)
	agentGone := make(chan struct{})
	go watchAgent(agentGone)

	k := &killer{grace: grace}
	for done := false; !done; {
		select {
		case r := <-reapedc:
			if r.pid == shell {
				status, shellDone = r.ws, true
				if hasChildren() {
					k.startGrace() // what the shell left behind
				}
			}
		case <-noChildren:
			done = true
		case <-term:
			k.startGrace()
		case <-k.graceEnd:
			k.startKilling()
		case <-agentGone:
			agentGone = nil
			k.startKilling()
		case <-k.tick:
			stop(syscall.SIGKILL)
		}
	}
	for len(reapedc) > 0 {
		if r := <-reapedc; r.pid == shell {
			status, shellDone = r.ws, true
		}
	}
	k.close()
	return status, shellDone
}

// reapAll waits for every child (wait4(-1)), sending each on reapedc,
// and closes noChildren when none is left (ECHILD).
func reapAll(reapedc chan<- reaped, noChildren chan<- struct{}) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			close(noChildren) // ECHILD: no descendant is left
			return
		}
		reapedc <- reaped{pid, ws}
	}
}

// watchAgent closes agentGone when the pipe from the agent reaches EOF
// (the agent ended, however it ended).
func watchAgent(agentGone chan<- struct{}) {
	f := os.NewFile(reaperAgentFD, "agent")
	var b [64]byte
	for {
		if _, err := f.Read(b[:]); err != nil {
			close(agentGone)
			return
		}
	}
}

// stop sends sig to every descendant.
func stop(sig syscall.Signal) {
	for _, pid := range Descendants(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
	}
}

// killer is the state of killing the descendants: a grace after SIGTERM,
// then SIGKILL repeated until none is left. It runs on supervise's
// goroutine only.
type killer struct {
	grace    time.Duration
	graceEnd <-chan time.Time // set once SIGTERM was sent
	killing  bool
	ticker   *time.Ticker
	tick     <-chan time.Time // set once SIGKILL was sent
}

// startKilling sends SIGKILL to every descendant now and again every
// 10ms: a process forked between the scan and the kill re-parents here
// alive once its parent dies, so look again until none is left.
func (k *killer) startKilling() {
	if k.killing {
		return
	}
	k.killing = true
	stop(syscall.SIGKILL)
	k.ticker = time.NewTicker(10 * time.Millisecond)
	k.tick = k.ticker.C
}

// startGrace sends SIGTERM to every descendant and starts the grace
// after which they are killed, unless either already happened.
func (k *killer) startGrace() {
	if k.graceEnd != nil || k.killing {
		return
	}
	stop(syscall.SIGTERM)
	k.graceEnd = time.After(k.grace)
}

func (k *killer) close() {
	if k.ticker != nil {
		k.ticker.Stop()
	}
}

// raiseDefault dies of sig with its default action, as the shell did:
// Go's own handlers are replaced by SIG_DFL first (the runtime would
// print a stack for some), and no core is written.
func raiseDefault(sig syscall.Signal) {
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	var dfl [4]uint64 // struct sigaction all zero: SIG_DFL, no flags, empty mask
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	set := uint64(1) << (uint(sig) - 1)
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
}

// hasChildren reports whether this process has a child, exited or not.
// A subreaper without children has no descendant at all: each one's
// chain of parents ends at a child of it.
func hasChildren() bool {
	var info unix.Siginfo
	return unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) != unix.ECHILD
}

// Descendants lists the processes below root (children, theirs, and so
// on), reading /proc/<pid>/task/<tid>/children, or the parent of every
// process in /proc where the kernel has no children files.
func Descendants(root int) []int {
	if out, ok := walkChildren(root); ok {
		return out
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, ok := Stat(e.Name()); ok && len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				children[ppid] = append(children[ppid], pid)
			}
		}
	}
	var out []int
	for queue := children[root]; len(queue) > 0; {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out
}

// walkChildren walks the children files from root; ok is false when
// root's cannot be read (no CONFIG_PROC_CHILDREN, or root is gone).
func walkChildren(root int) (out []int, ok bool) {
	kids, ok := childrenOf(root)
	if !ok {
		return nil, false
	}
	seen := map[int]bool{root: true}
	for queue := kids; len(queue) > 0; {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		more, _ := childrenOf(pid) // gone meanwhile: its children re-parent and are seen next time
		queue = append(queue, more...)
	}
	return out, true
}

// childrenOf reads the children of every thread of pid.
func childrenOf(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	var out []int
	read := false
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		read = true
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, read
}

// Stat reads the fields of /proc/<pid>/stat after the parenthesised
// command: state ppid pgrp session ... (starttime is the 20th).
func Stat(pid string) ([]string, bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) > 0
}
