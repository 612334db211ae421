package local

// This file keeps a durable registry of the markers of the commands
// running now, so that an agent starting after one that died (SIGKILL,
// OOM, its reaper killed too) kills what that one's commands left
// without reading any session log and without waiting for the session
// to be loaded again (it may never be).
//
// Layout under the registry root (<data dir>/running):
//
//	<owner>.lock   held (flock) by the live agent process <owner>
//	<owner>/<n>    one running command: its marker, written before the
//	               command starts, then "<pgid> <leader start time>" on a
//	               second line once it started, and "cgroup <path>" on
//	               the last where the command may have a cgroup of its
//	               own (reaper.CgroupPath); removed when it ends
//
// Records are not fsynced: they must outlive the agent process, which
// the page cache does; only a crash of the machine loses them, and that
// ends the commands too. (A fsynced file and directory cost about 6 ms a
// command on a slow disk.)
//
// A lock that can be taken belongs to an agent that is gone: its markers
// and process groups are swept. A live agent sharing the data dir keeps
// its lock, so its commands are left alone.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/reaper"
)

// Running is one agent process's part of the registry of running
// commands. Safe for concurrent use.
type Running struct {
	dir      string   // <root>/<owner>
	lockPath string   // <root>/<owner>.lock
	lock     *os.File // that file, flocked until Close

	mu     sync.Mutex
	next   int
	closed bool

	// srv is the reaper server of this agent's unsandboxed commands
	// (serve_linux.go): started at the first, started again after it
	// died, closed by Close. unserved is set once the server could not
	// run a command here (no cgroup it can make): each command then gets
	// a reaper of its own.
	srvMu    sync.Mutex
	srv      *reaperServer
	unserved bool
	// prestarting is the goroutine of Prestart, waited for by Close.
	prestarting sync.WaitGroup
	prestarted  sync.Once
}

// OpenRunning opens this process's part of the registry under root.
func OpenRunning(root string) (*Running, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("open the registry of running commands: %w", err)
	}
	owner := strings.TrimPrefix(NewMarker(), MarkerVar+"=")
	// Locked before it is visible under its name, so a sweeper never
	// takes a live owner for a dead one.
	tmp, err := os.CreateTemp(root, ".owner-*")
	if err != nil {
		return nil, fmt.Errorf("open the registry of running commands: %w", err)
	}
	fail := func(err error) (*Running, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("open the registry of running commands: %w", err)
	}
	if err := flock(tmp, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	lockPath := filepath.Join(root, owner+".lock")
	if err := os.Rename(tmp.Name(), lockPath); err != nil {
		return fail(err)
	}
	dir := filepath.Join(root, owner)
	if err := os.Mkdir(dir, 0o700); err != nil {
		tmp.Close()
		os.Remove(lockPath)
		return nil, fmt.Errorf("open the registry of running commands: %w", err)
	}
	return &Running{dir: dir, lockPath: lockPath, lock: tmp}, nil
}

// RunningEntry is the record of one running command.
type RunningEntry struct{ path, marker, cgroup string }

// Add records marker before its command starts; Remove deletes the
// record once the command and everything carrying its marker are gone.
func (r *Running) Add(marker string) (*RunningEntry, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("the registry of running commands is closed")
	}
	r.next++
	path := filepath.Join(r.dir, strconv.Itoa(r.next))
	r.mu.Unlock()
	// The cgroup is recorded before the reaper may create it.
	e := &RunningEntry{path: path, marker: marker, cgroup: reaper.CgroupPath(marker)}
	if err := writeRecord(path, marker+"\n"+e.cgroupLine(), os.O_EXCL); err != nil {
		os.Remove(path)
		return nil, err
	}
	return e, nil
}

// SetGroup adds the command's process group (its leader's pid), with the
// leader's start time so that a sweep never takes a reused id for it.
// Best effort: the marker alone still finds what carries it.
func (e *RunningEntry) SetGroup(pgid int) {
	f, ok := procStat(strconv.Itoa(pgid))
	if !ok || len(f) < 20 {
		return
	}
	_ = writeRecord(e.path, e.marker+"\n"+strconv.Itoa(pgid)+" "+f[19]+"\n"+e.cgroupLine(), os.O_TRUNC)
}

func (e *RunningEntry) cgroupLine() string {
	if e.cgroup == "" {
		return ""
	}
	return "cgroup " + e.cgroup
}

// Remove deletes the record.
func (e *RunningEntry) Remove() { _ = os.Remove(e.path) }

func writeRecord(path, text string, flag int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// server returns the reaper server, starting it when there is none or
// the last one died; nil when commands cannot be served here.
func (r *Running) server() *reaperServer {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	r.srvMu.Lock()
	defer r.srvMu.Unlock()
	if closed || r.unserved {
		return nil
	}
	if r.srv != nil && r.srv.alive() {
		return r.srv
	}
	if r.srv != nil {
		r.srv.close(DefaultKillGrace) // reaps the dead one
		r.srv = nil
	}
	srv, err := startReaperServer(DefaultKillGrace)
	if err != nil {
		r.unserved = true
		return nil
	}
	r.srv = srv
	return srv
}

// Prestart starts the reaper server in the background where commands
// will be served, so that the first command of a session does not wait
// for a process start (about as long as a quick command). Idempotent.
func (r *Running) Prestart() {
	if r == nil || reaper.CgroupPath(NewMarker()) == "" {
		return
	}
	r.prestarted.Do(func() {
		r.prestarting.Add(1)
		go func() {
			defer r.prestarting.Done()
			r.server()
		}()
	})
}

// noServer records that the server cannot run commands here (it could
// not make a cgroup, or the kernel cannot fork into one), and stops it.
func (r *Running) noServer() {
	r.srvMu.Lock()
	defer r.srvMu.Unlock()
	r.unserved = true
	if r.srv != nil {
		r.srv.close(DefaultKillGrace)
		r.srv = nil
	}
}

// Close stops the reaper server (which kills the commands still running),
// removes this process's (empty) part of the registry and releases its
// lock. Records of commands still running stay: they are swept by the
// next agent to start.
func (r *Running) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.prestarting.Wait()
	r.srvMu.Lock()
	if r.srv != nil {
		r.srv.close(2*DefaultKillGrace + time.Second)
		r.srv = nil
	}
	r.srvMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if os.Remove(r.dir) == nil {
		// Directory first: a lock without a directory is harmless, a
		// directory without its lock is taken for a dead owner's.
		_ = os.Remove(r.lockPath)
	}
	return r.lock.Close()
}

// SweepRunning kills what the commands recorded by agents that are gone
// (their lock can be taken) left: every process carrying a recorded
// marker, and every member of a recorded process group (kill(-pgid)),
// marker or not, when the group is still the one recorded (its leader
// has the recorded start time, or a member carries the marker), and
// every process in a recorded cgroup that still exists (which it then
// removes), wherever the process went and whatever it carries. It then
// removes those records. The records of live agents are left alone. It
// reads the registry, and /proc only when a gone agent left records. It
// returns how many processes it killed.
func SweepRunning(root string) (int, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep the registry of running commands: %w", err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	var markers []string
	groups := map[int]string{}
	cgroups := map[string]bool{}
	var gone []func()
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".owner-"):
			// An owner that died while opening: nothing recorded yet.
			if f, ok := takeLock(filepath.Join(root, name)); ok {
				os.Remove(filepath.Join(root, name))
				f.Close()
			}
		case strings.HasSuffix(name, ".lock"):
			owner := strings.TrimSuffix(name, ".lock")
			lockPath := filepath.Join(root, name)
			f, ok := takeLock(lockPath)
			if !ok {
				continue // a live agent
			}
			m, err := readRecords(filepath.Join(root, owner), groups, cgroups)
			errs = append(errs, err)
			markers = append(markers, m...)
			gone = append(gone, func() {
				errs = append(errs, removeOwner(filepath.Join(root, owner)))
				os.Remove(lockPath)
				f.Close()
			})
		case e.IsDir() && !names[name+".lock"]:
			// A sweeper died between removing the lock and the directory.
			m, err := readRecords(filepath.Join(root, name), groups, cgroups)
			errs = append(errs, err)
			markers = append(markers, m...)
			gone = append(gone, func() { errs = append(errs, removeOwner(filepath.Join(root, name))) })
		}
	}
	killed := 0
	// Each cgroup first: exact, whatever its processes carry.
	for cg := range cgroups {
		killed += reaper.KillCgroup(cg, 2*time.Second)
	}
	if len(markers) > 0 {
		killed += sweepLeft(2*time.Second, groups, markers)
	}
	// Records go only after their processes: a sweep cut short is
	// repeated by the next start.
	for _, g := range gone {
		g()
	}
	return killed, errors.Join(errs...)
}

// takeLock opens path and takes its lock without waiting; ok=false when a
// live process holds it (or it is gone).
func takeLock(path string) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	if flock(f, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// readMarkers reads the markers recorded in an owner's directory.
func readMarkers(dir string) ([]string, error) {
	return readRecords(dir, map[int]string{}, map[string]bool{})
}

// readRecords reads the markers recorded in an owner's directory, and
// adds the recorded process groups to groups and the recorded cgroups
// that are a command's cgroup for the record's marker (the file is not
// trusted: nothing else is killed) to cgroups.
func readRecords(dir string, groups map[int]string, cgroups map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		m := lines[0]
		if !strings.HasPrefix(m, MarkerVar+"=") {
			continue
		}
		out = append(out, m)
		for _, l := range lines[1:] {
			if cg, ok := strings.CutPrefix(l, "cgroup "); ok {
				if reaper.ValidCgroup(cg, m) {
					cgroups[cg] = true
				}
			} else if pg, start, ok := strings.Cut(l, " "); ok {
				if n, err := strconv.Atoi(pg); err == nil && n > 1 && start != "" {
					groups[n] = start
				}
			}
		}
	}
	return out, nil
}

func removeOwner(dir string) error {
	err := os.RemoveAll(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
