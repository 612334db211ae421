package local

// This file is the agent's end of the reaper server (reaper/serve_linux.go):
// one reaper process for all the commands of this agent, sandboxed or
// not, where cgroup v2 gives each command a cgroup of its own. The
// registry of running commands (Running) owns it: started at the first
// command, started again after it died, closed with the registry. Where
// there is no cgroup, or the server cannot make one, each command gets a
// reaper of its own (useReaper), as before.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/reaper"
)

// Failures of a start that concern this command or this server only:
// the command runs under a reaper of its own, and the next one is served
// again (by a new server, after errServerGone).
var (
	// errServerGone is the answer to a start the server died before
	// taking.
	errServerGone = errors.New("the reaper process ended")
	// errTooLarge: the start does not fit in one message.
	errTooLarge = errors.New("the command and its environment are too large for the reaper")
)

// reaperServer is a running server and the agent's end of its socket.
type reaperServer struct {
	cmd *exec.Cmd
	fd  int // the agent's end of the socket

	sendMu sync.Mutex // one message at a time on the socket

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*servedRun
	gone    bool // the reader ended: nothing more will be answered

	readDone chan struct{} // the reader goroutine ended
	waitDone chan struct{} // the process was reaped
	closeMu  sync.Once
}

// servedRun is one command of the server, as the agent sees it.
type servedRun struct {
	id      uint64
	pid     int
	started chan reaper.Reply // the start's answer (one)
	exited  chan struct{}     // closed at its exit, or when the server is gone
	reply   reaper.Reply      // the exit's answer; valid once exited is closed
	ok      bool              // whether reply came (false: the server died first)
}

// startReaperServer starts the server with grace as its default.
func startReaperServer(grace time.Duration) (*reaperServer, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start the reaper: %w", err)
	}
	child := os.NewFile(uintptr(fds[1]), "reaper")
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe", // this executable, even once replaced on disk
		Args:       reaper.ServerArgs(grace),
		Env:        []string{}, // commands get theirs with each start
		ExtraFiles: []*os.File{child},
		Stderr:     os.Stderr,
		// Its own group: a terminal's ^C reaches the agent, which
		// decides. No Pdeathsig: it must outlive a killed agent long
		// enough to kill the commands.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	child.Close()
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("start the reaper: %w", err)
	}
	s := &reaperServer{
		cmd: cmd, fd: fds[0], pending: map[uint64]*servedRun{},
		readDone: make(chan struct{}), waitDone: make(chan struct{}),
	}
	go s.read()
	go func() {
		_ = cmd.Wait()
		close(s.waitDone)
	}()
	return s, nil
}

// read dispatches the server's answers until its end closes.
func (s *reaperServer) read() {
	defer close(s.readDone)
	buf := make([]byte, 64<<10)
	for {
		n, _, _, _, err := unix.Recvmsg(s.fd, buf, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		var r reaper.Reply
		if json.Unmarshal(buf[:n], &r) != nil {
			continue
		}
		s.mu.Lock()
		run := s.pending[r.ID]
		switch {
		case run == nil:
		case r.Op == "started":
			run.started <- r
			if r.Err != "" {
				delete(s.pending, r.ID)
			}
		case r.Op == "exited":
			delete(s.pending, r.ID)
			run.reply, run.ok = r, true
			close(run.exited)
		}
		s.mu.Unlock()
	}
	// Gone: every command still waiting hears it now.
	s.mu.Lock()
	s.gone = true
	for id, run := range s.pending {
		select {
		case run.started <- reaper.Reply{Op: "started", ID: id, Err: errServerGone.Error(), Unserved: true}:
		default:
		}
		close(run.exited)
	}
	clear(s.pending)
	s.mu.Unlock()
}

// alive reports whether the server still answers.
func (s *reaperServer) alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone
}

// start asks the server to run ec (its Path, Args, Env and Dir) in the
// cgroup at cg, with out as its stdout and stderr, and waits for its
// answer or the end of ctx. unserved is true when
// the failure is the server's (run the command another way), false when
// it is the command's own (a missing shell or directory).
func (s *reaperServer) start(ctx context.Context, ec *exec.Cmd, cg string, grace time.Duration, out *os.File) (run *servedRun, unserved bool, err error) {
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return nil, true, errServerGone
	}
	s.nextID++
	run = &servedRun{id: s.nextID, started: make(chan reaper.Reply, 1), exited: make(chan struct{})}
	s.pending[run.id] = run
	s.mu.Unlock()
	r0 := reaper.Request{
		Op: "start", ID: run.id, Path: ec.Path, Argv: ec.Args, Env: ec.Env, Dir: ec.Dir,
		Grace: int64(grace), Cgroup: cg,
	}
	if a := ec.SysProcAttr; a != nil {
		r0.Cloneflags, r0.UidMappings, r0.GidMappings, r0.GidSetgroups = a.Cloneflags, a.UidMappings, a.GidMappings, a.GidMappingsEnableSetgroups
	}
	req, err := json.Marshal(r0)
	if err == nil && len(req) > reaper.MaxMessage {
		err = errTooLarge
	}
	if err != nil {
		s.forget(run.id)
		return nil, true, fmt.Errorf("%w: %v", errTooLarge, err)
	}
	if err := s.send(req, unix.UnixRights(int(out.Fd()))); err != nil {
		// The server is gone (EPIPE): the reader sees it too, and the
		// next command starts another.
		s.forget(run.id)
		return nil, true, fmt.Errorf("%w: %v", errServerGone, err)
	}
	var r reaper.Reply
	select {
	case r = <-run.started:
	case <-ctx.Done():
		// Messages are handled in order: the stop reaches the command
		// once it started, and its end is answered to nobody.
		s.stop(run)
		return nil, false, ctx.Err()
	}
	if r.Err == errServerGone.Error() {
		return nil, true, errServerGone
	}
	if r.Err != "" {
		return nil, r.Unserved, errors.New(r.Err)
	}
	run.pid = r.Pid
	return run, false, nil
}

// stop asks the server to end run: SIGTERM now, SIGKILL after its grace.
func (s *reaperServer) stop(run *servedRun) {
	req, _ := json.Marshal(reaper.Request{Op: "stop", ID: run.id})
	_ = s.send(req, nil)
}

func (s *reaperServer) send(msg, oob []byte) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for {
		err := unix.Sendmsg(s.fd, msg, oob, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func (s *reaperServer) forget(id uint64) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// close tells the server the agent is done (it kills what still runs and
// exits), and waits for it, killing it when it does not end within
// bound, so that nothing of the commands runs and no goroutine of the
// server's is left when it returns.
func (s *reaperServer) close(bound time.Duration) {
	s.closeMu.Do(func() {
		_ = unix.Shutdown(s.fd, unix.SHUT_RDWR)
		<-s.readDone // at once: the read side is shut down
		_ = unix.Close(s.fd)
		select {
		case <-s.waitDone:
		case <-time.After(bound):
			_ = s.cmd.Process.Kill()
			<-s.waitDone
		}
	})
}

// servedProc is a command the server runs (launched).
type servedProc struct {
	srv   *reaperServer
	run   *servedRun
	grace time.Duration
}

func (p *servedProc) pid() int              { return p.run.pid }
func (p *servedProc) done() <-chan struct{} { return p.run.exited }

// stop asks the server to end the command, and waits for its answer for
// as long as the server may take (its grace for the shell and what it
// left); the agent sweeps itself if none came (finish).
func (p *servedProc) stop() {
	p.srv.stop(p.run)
	select {
	case <-p.run.exited:
	case <-time.After(2*p.grace + time.Second):
	}
}

// finish returns the shell's status, and whether the server reaped
// everything. When the server died (a command killed it) or did not
// answer, the shell was killed with it (Pdeathsig): killed, not clean.
func (p *servedProc) finish() (syscall.WaitStatus, bool) {
	select {
	case <-p.run.exited:
		if p.run.ok {
			return syscall.WaitStatus(p.run.reply.Status), true
		}
	default:
	}
	return syscall.WaitStatus(syscall.SIGKILL), false
}

// serveCommand runs ec under the registry's reaper server where it can.
// ok is false when it cannot (no registry, no cgroup v2 here, the server
// refused): the caller then starts ec itself.
func serveCommand(ctx context.Context, running *Running, ec *exec.Cmd, marker string, grace time.Duration, out *os.File) (p launched, ok bool, err error) {
	if ec.Err != nil || ec.Path == "" || len(ec.ExtraFiles) > 0 || !servable(ec.SysProcAttr) {
		return nil, false, nil
	}
	cg := reaper.CgroupPath(marker)
	if cg == "" {
		return nil, false, nil
	}
	srv := running.server()
	if srv == nil {
		return nil, false, nil
	}
	run, unserved, err := srv.start(ctx, ec, cg, grace, out)
	if err != nil {
		if unserved {
			if !errors.Is(err, errServerGone) && !errors.Is(err, errTooLarge) {
				// The server cannot make cgroups here: not again.
				running.noServer()
			}
			return nil, false, nil
		}
		return nil, true, err
	}
	return &servedProc{srv: srv, run: run, grace: grace}, true, nil
}

// servable reports whether the server can start a process with a: it
// sets a process group and Pdeathsig itself, and takes the namespaces a
// sandbox asks for (clone flags, id maps); anything else (credentials, a
// chroot, ptrace...) is started by the agent.
func servable(a *syscall.SysProcAttr) bool {
	if a == nil {
		return true
	}
	known := syscall.SysProcAttr{
		Setpgid: a.Setpgid, Pdeathsig: a.Pdeathsig, Cloneflags: a.Cloneflags,
		UidMappings: a.UidMappings, GidMappings: a.GidMappings, GidMappingsEnableSetgroups: a.GidMappingsEnableSetgroups,
	}
	return reflect.DeepEqual(*a, known)
}
