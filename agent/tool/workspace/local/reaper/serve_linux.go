package reaper

// This file is the reaper as a server: one process per agent, started at
// its first command, that runs every command where cgroup v2 gives each
// one a cgroup of its own (a sandboxed one in the namespaces its sandbox
// asks for). Starting the agent's binary again
// for each command (runReaper) costs a Go runtime start and every package
// init of a large binary, about as much as the command itself; the server
// pays that once, and forks each command's shell straight into a fresh
// cgroup (clone3 with CLONE_INTO_CGROUP), so nothing the command starts
// can be outside it, from its first instruction on.
//
// The guarantees are the per-command reaper's:
//   - the server is a child subreaper: what a command leaves behind
//     re-parents here and is reaped here, never by init;
//   - a command's end kills what is left in its cgroup (SIGTERM, SIGKILL
//     after the grace), before the agent hears that it ended, so "exited"
//     means nothing of it runs any more;
//   - the agent's death (EOF on the socket, however it died) kills every
//     command's cgroup and every descendant, then the server exits;
//   - the server's own death (a command killed it) kills each shell
//     (Pdeathsig of the forking thread, held for the server's life), and
//     the agent, seeing EOF on its end, kills what is left in the cgroups
//     of the commands that were running;
//   - both killed at once: the records in the registry of running commands
//     name each cgroup, and the next agent's start kills them.
//
// The agent and the server talk over a SOCK_SEQPACKET socket (fd 3): one
// JSON message a packet, the command's output descriptor passed with its
// start (SCM_RIGHTS).

import (
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ServeArg, after Arg, starts the reaper as the server (ServerArgs).
const ServeArg = "serve"

// serverSocketFD is the socket to the agent (ExtraFiles[0]).
const serverSocketFD = 3

// MaxMessage bounds one message either way (a command's environment
// included).
const MaxMessage = 1 << 20

// Request is a message from the agent to the server.
type Request struct {
	// Op is "start" (with one descriptor: the command's stdout and
	// stderr) or "stop" (SIGTERM now, SIGKILL after the grace).
	Op   string   `json:"op"`
	ID   uint64   `json:"id"`
	Path string   `json:"path,omitempty"`
	Argv []string `json:"argv,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// Grace is the time between SIGTERM and SIGKILL, in nanoseconds (0:
	// the server's own).
	Grace int64 `json:"grace,omitempty"`
	// Cgroup is the command's cgroup (CgroupPath of its marker), which
	// the server creates and forks the shell into.
	Cgroup string `json:"cgroup,omitempty"`
	// Namespaces of a sandboxed command (its SysProcAttr): clone flags
	// and the id maps of a new user namespace.
	Cloneflags   uintptr                `json:"cloneflags,omitempty"`
	UidMappings  []syscall.SysProcIDMap `json:"uidMappings,omitempty"`
	GidMappings  []syscall.SysProcIDMap `json:"gidMappings,omitempty"`
	GidSetgroups bool                   `json:"gidSetgroups,omitempty"`
}

// Reply is a message from the server to the agent.
type Reply struct {
	// Op is "started" (Pid, or Err) or "exited" (Status).
	Op  string `json:"op"`
	ID  uint64 `json:"id"`
	Pid int    `json:"pid,omitempty"`
	// Err says why the command did not start; Unserved is set when the
	// reason is the server's (no cgroup could be made, or the kernel
	// cannot fork into one), not the command's: the agent then runs it
	// another way.
	Err      string `json:"err,omitempty"`
	Unserved bool   `json:"unserved,omitempty"`
	// Status is the shell's wait status (syscall.WaitStatus).
	Status uint32 `json:"status"`
}

// ServerArgs is the argv of the server, with grace between SIGTERM and
// SIGKILL.
func ServerArgs(grace time.Duration) []string {
	return []string{Arg, ServeArg, strconv.FormatInt(int64(grace), 10)}
}

// served is one command of the server.
type served struct {
	id        uint64
	pid       int
	cgroup    string
	grace     time.Duration
	shellDone bool
	status    syscall.WaitStatus
	// termSent is when SIGTERM went to what is left (a stop, or the
	// shell's end with processes left); killing once the grace passed.
	termSent time.Time
	killing  bool
}

// server is the state of the server process; all of it is owned by the
// main goroutine (loop), locked to its thread.
type server struct {
	sock    int
	devNull int
	grace   time.Duration
	byID    map[uint64]*served
	byPid   map[int]*served
}

// serverEvent is what the helper goroutines hand the loop.
type serverEvent struct {
	req    *Request
	fds    []int
	reaped *reaped
	gone   bool // the agent is gone (EOF, or a read error)
}

// runServer serves the server's argv (after argv[0]): ServeArg, grace.
// It does not return before it exits.
func runServer(args []string) int {
	grace := defaultGrace
	if len(args) > 1 {
		if n, err := strconv.ParseInt(args[1], 10, 64); err == nil && n > 0 {
			grace = time.Duration(n)
		}
	}
	syscall.CloseOnExec(serverSocketFD)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		os.Stderr.WriteString("acp-agent reaper: become a subreaper: " + err.Error() + "\n")
		return 126
	}
	devNull, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		os.Stderr.WriteString("acp-agent reaper: " + err.Error() + "\n")
		return 126
	}
	// Every fork happens on this thread, which lives as long as the
	// server: each shell's Pdeathsig fires when the server dies.
	runtime.LockOSThread()
	s := &server{sock: serverSocketFD, devNull: devNull, grace: grace, byID: map[uint64]*served{}, byPid: map[int]*served{}}
	events := make(chan serverEvent, 64)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	go s.readRequests(events)
	go reapOnSignal(chld, events)
	s.loop(events, term)
	return 0
}

// readRequests reads the agent's messages until EOF (the agent is gone).
func (s *server) readRequests(events chan<- serverEvent) {
	buf := make([]byte, MaxMessage)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(s.sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			events <- serverEvent{gone: true}
			return
		}
		var fds []int
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if got, err := unix.ParseUnixRights(&m); err == nil {
					fds = append(fds, got...)
				}
			}
		}
		var req Request
		if err := json.Unmarshal(buf[:n], &req); err != nil {
			closeAll(fds)
			continue // not the agent's: nothing to answer
		}
		events <- serverEvent{req: &req, fds: fds}
	}
}

// reapOnSignal reaps every child that exited, at each SIGCHLD.
func reapOnSignal(chld <-chan os.Signal, events chan<- serverEvent) {
	for range chld {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			events <- serverEvent{reaped: &reaped{pid, ws}}
		}
	}
}

// loop handles the events until the agent is gone, then kills everything
// and returns.
func (s *server) loop(events <-chan serverEvent, term <-chan os.Signal) {
	var tick *time.Ticker
	var tickc <-chan time.Time
	for {
		select {
		case ev := <-events:
			switch {
			case ev.gone:
				s.shutdown(events)
				return
			case ev.req != nil:
				s.handle(ev.req, ev.fds)
			case ev.reaped != nil:
				s.reaped(*ev.reaped)
			}
		case <-term:
			s.shutdown(events)
			return
		case <-tickc:
			s.tick()
		}
		// A ticker only while some command has processes left to end.
		if s.draining() && tick == nil {
			tick = time.NewTicker(10 * time.Millisecond)
			tickc = tick.C
		} else if !s.draining() && tick != nil {
			tick.Stop()
			tick, tickc = nil, nil
		}
	}
}

// handle serves one request.
func (s *server) handle(req *Request, fds []int) {
	defer closeAll(fds)
	switch req.Op {
	case "start":
		s.start(req, fds)
	case "stop":
		if c := s.byID[req.ID]; c != nil {
			s.terminate(c)
		}
	}
}

// start forks the command's shell into its new cgroup and answers.
func (s *server) start(req *Request, fds []int) {
	reply := Reply{Op: "started", ID: req.ID}
	if len(fds) != 1 || req.Path == "" || len(req.Argv) == 0 || req.Cgroup == "" || s.byID[req.ID] != nil {
		reply.Err, reply.Unserved = "acp-agent reaper: a malformed start", true
		s.send(reply)
		return
	}
	if err := os.Mkdir(req.Cgroup, 0o755); err != nil {
		reply.Err, reply.Unserved = "acp-agent reaper: make the command's cgroup: "+err.Error(), true
		s.send(reply)
		return
	}
	cg, err := syscall.Open(req.Cgroup, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = syscall.Rmdir(req.Cgroup)
		reply.Err, reply.Unserved = "acp-agent reaper: open the command's cgroup: "+err.Error(), true
		s.send(reply)
		return
	}
	pid, err := syscall.ForkExec(req.Path, req.Argv, &syscall.ProcAttr{
		Dir:   req.Dir,
		Env:   req.Env,
		Files: []uintptr{uintptr(s.devNull), uintptr(fds[0]), uintptr(fds[0])},
		Sys: &syscall.SysProcAttr{
			Setpgid:                    true,
			Pdeathsig:                  syscall.SIGKILL,
			UseCgroupFD:                true,
			CgroupFD:                   cg,
			Cloneflags:                 req.Cloneflags,
			UidMappings:                req.UidMappings,
			GidMappings:                req.GidMappings,
			GidMappingsEnableSetgroups: req.GidSetgroups,
		},
	})
	syscall.Close(cg)
	if err != nil {
		_ = syscall.Rmdir(req.Cgroup)
		reply.Err = err.Error()
		// The command's own failures (no such file, a bad directory)
		// are its answer; others are the kernel refusing the cgroup.
		var errno syscall.Errno
		reply.Unserved = !errors.As(err, &errno) || !commandErrno(errno)
		if !reply.Unserved {
			reply.Err = "fork/exec " + req.Path + ": " + err.Error()
		}
		s.send(reply)
		return
	}
	c := &served{id: req.ID, pid: pid, cgroup: req.Cgroup, grace: s.grace}
	if req.Grace > 0 {
		c.grace = time.Duration(req.Grace)
	}
	s.byID[c.id], s.byPid[pid] = c, c
	reply.Pid = pid
	s.send(reply)
}

// commandErrno reports whether a fork/exec failure is the command's own
// (its path or directory), which starting it any other way would meet
// too.
func commandErrno(e syscall.Errno) bool {
	switch e {
	case syscall.ENOENT, syscall.EACCES, syscall.ENOTDIR, syscall.ENOEXEC, syscall.ELOOP,
		syscall.ENAMETOOLONG, syscall.E2BIG, syscall.ETXTBSY, syscall.EISDIR:
		return true
	}
	return false
}

// reaped handles a child that was reaped: a shell, or anything else that
// re-parented here (nothing to do but having reaped it).
func (s *server) reaped(r reaped) {
	c := s.byPid[r.pid]
	if c == nil {
		return
	}
	delete(s.byPid, r.pid)
	c.shellDone, c.status = true, r.ws
	if populated(c.cgroup) {
		s.terminate(c) // what the shell left behind
		return
	}
	s.finish(c)
}

// terminate sends SIGTERM to what is left of c, once; it is killed when
// the grace has passed (tick).
func (s *server) terminate(c *served) {
	if !c.termSent.IsZero() {
		return
	}
	c.termSent = time.Now()
	if !c.shellDone {
		_ = syscall.Kill(-c.pid, syscall.SIGTERM)
	}
	for _, pid := range cgroupPIDs(filepath.Join(c.cgroup, "cgroup.procs")) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
}

// draining reports whether a command is ending and has processes left.
func (s *server) draining() bool {
	for _, c := range s.byID {
		if !c.termSent.IsZero() {
			return true
		}
	}
	return false
}

// tick moves every ending command on: killed once its grace passed,
// finished once its shell is reaped and its cgroup empty.
func (s *server) tick() {
	for _, c := range s.byID {
		if c.termSent.IsZero() {
			continue
		}
		if c.shellDone && !populated(c.cgroup) {
			s.finish(c)
			continue
		}
		if c.killing || time.Since(c.termSent) >= c.grace {
			c.killing = true
			killCgroupNow(c.cgroup)
			if !c.shellDone {
				_ = syscall.Kill(-c.pid, syscall.SIGKILL)
			}
		}
	}
}

// finish answers that c ended, with nothing of it left, and removes its
// cgroup.
func (s *server) finish(c *served) {
	delete(s.byID, c.id)
	// The answer first: the command is over once its cgroup is empty,
	// and the empty directory costs the agent nothing to wait for.
	s.send(Reply{Op: "exited", ID: c.id, Status: uint32(c.status)})
	removeCgroup(c.cgroup)
}

// shutdown kills every command and every descendant, reaps them, and
// removes the cgroups: the agent is gone.
func (s *server) shutdown(events <-chan serverEvent) {
	if len(s.byID) == 0 && !hasChildren() {
		return // nothing runs: the common end
	}
	for _, c := range s.byID {
		killCgroupNow(c.cgroup)
		if !c.shellDone {
			_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		}
	}
	stop(syscall.SIGKILL)
	// Reap until no child is left, for a bounded time (a process stuck in
	// the kernel cannot be reaped); repeat the kill for what forked
	// meanwhile.
	deadline := time.Now().Add(s.grace)
	for hasChildren() && time.Now().Before(deadline) {
		select {
		case <-events:
		case <-time.After(10 * time.Millisecond):
			stop(syscall.SIGKILL)
		}
	}
	for _, c := range s.byID {
		removeCgroup(c.cgroup)
	}
}

// send writes one reply; a failed write means the agent is gone, which
// the reader sees too.
func (s *server) send(r Reply) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	for {
		err := unix.Sendmsg(s.sock, b, nil, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// killCgroupNow kills every process in the cgroup at path, at once
// (cgroup.kill, or each listed pid before Linux 5.14).
func killCgroupNow(path string) {
	if writeCgroupFile(filepath.Join(path, "cgroup.kill"), "1") == nil {
		return
	}
	for _, pid := range cgroupPIDs(filepath.Join(path, "cgroup.procs")) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// removeCgroup removes an empty cgroup, retrying briefly: the kernel may
// hold it for a moment after its last process was reaped.
func removeCgroup(path string) {
	for i := 0; i < 100; i++ {
		err := syscall.Rmdir(path)
		if err == nil || errors.Is(err, syscall.ENOENT) || !errors.Is(err, syscall.EBUSY) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
