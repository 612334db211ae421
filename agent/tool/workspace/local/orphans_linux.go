package local

// This file makes the agent a child subreaper: a process that leaves its
// parent behind (an MCP server's helper, a command whose reaper was
// killed) re-parents to the agent rather than to init, is reaped when it
// exits, and is killed when the agent stops.
//
// Reaping here must not steal the exit status os/exec waits for: only a
// zombie child this process holds no pidfd for is reaped. os.StartProcess
// keeps a pidfd for every child it starts (from clone, so before the child
// can exit) until Wait has reaped it; an orphan that re-parented here has
// none.

import (
	"bytes"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var adopting struct {
	mu   sync.Mutex
	n    int
	stop chan struct{}
	done chan struct{}
}

// AdoptOrphans makes this process a child subreaper and reaps the orphans
// that re-parent to it. The returned stop, once every caller called its
// own, kills the adopted orphans still alive (and what they started),
// reaps them and ends the subreaper. It fails, changing nothing, where
// the kernel does not show which children os/exec waits for (no pidfd).
func AdoptOrphans() (stop func(), err error) {
	adopting.mu.Lock()
	defer adopting.mu.Unlock()
	if adopting.n == 0 {
		if !pidfdsShown() {
			return func() {}, errors.New("this kernel shows no pidfd in /proc/self/fdinfo: orphans are left to init")
		}
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return func() {}, err
		}
		sigc := make(chan os.Signal, 1)
		signal.Notify(sigc, syscall.SIGCHLD)
		adopting.stop, adopting.done = make(chan struct{}), make(chan struct{})
		go reapAdopted(sigc, adopting.stop, adopting.done)
	}
	adopting.n++
	var once sync.Once
	return func() { once.Do(releaseOrphans) }, nil
}

func releaseOrphans() {
	adopting.mu.Lock()
	defer adopting.mu.Unlock()
	if adopting.n--; adopting.n > 0 {
		return
	}
	close(adopting.stop)
	<-adopting.done
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
}

func reapAdopted(sigc chan os.Signal, stop, done chan struct{}) {
	defer close(done)
	defer signal.Stop(sigc)
	for {
		select {
		case <-sigc:
			reapOrphans()
		case <-stop:
			// What a killed orphan started re-parents here too: kill and
			// reap until nothing adopted is left (each death sends
			// SIGCHLD), for a bounded time (a process stuck in the
			// kernel cannot be reaped).
			bound := time.After(DefaultKillGrace)
			for {
				reapOrphans()
				live := adopted(false)
				if len(live) == 0 {
					// One may have died between the reap and the look
					// (a zombie is not live): reap what is left.
					reapOrphans()
					return
				}
				for _, pid := range live {
					for _, d := range append(descendants(pid), pid) {
						_ = syscall.Kill(d, syscall.SIGKILL)
					}
				}
				select {
				case <-sigc:
				case <-bound:
					return
				}
			}
		}
	}
}

// reapOrphans reaps the adopted children that have exited.
func reapOrphans() {
	for _, pid := range adopted(true) {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// adopted lists the children of this process that os/exec does not wait
// for (no pidfd here names them): exited ones (zombies), or live ones.
// It runs on every SIGCHLD and three times at shutdown, so it reads one
// children file, the main thread's, and the stat of each child listed;
// a scan of every process in /proc is the fallback where the kernel has
// no children files. One file is enough: an orphan re-parents to the
// first live thread of its subreaper (find_alive_thread), the main
// thread, which a Go program never ends; children os/exec started from
// other threads may be missing from it, and they are not adopted ones.
func adopted(zombies bool) []int {
	self := os.Getpid()
	var kids []int
	if children, ok := mainThreadChildren(self); ok {
		for _, pid := range children {
			if state, ok := procState(strconv.Itoa(pid)); ok && (state == "Z") == zombies {
				kids = append(kids, pid)
			}
		}
	} else {
		kids = scanChildren(self, zombies)
	}
	if len(kids) == 0 {
		return nil
	}
	// Read after the children: a pidfd is made before its child exists.
	held := heldPidfds(kids)
	out := kids[:0]
	for _, pid := range kids {
		if !held[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// scanChildren lists the children of self in the given state (zombies or
// live ones) by reading the stat of every process in /proc.
func scanChildren(self int, zombies bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := strconv.Itoa(self)
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, ok := procStat(e.Name())
		if !ok || len(f) < 2 || f[1] != parent {
			continue
		}
		if (f[0] == "Z") == zombies {
			kids = append(kids, pid)
		}
	}
	return kids
}

// mainThreadChildren reads the children file of pid's main thread; ok is
// false where the kernel has none (CONFIG_PROC_CHILDREN).
func mainThreadChildren(pid int) ([]int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return nil, false
	}
	var out []int
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, n)
		}
	}
	return out, true
}

// heldPidfds reports which of pids this process holds a pidfd for. It
// reads the fdinfo of each open descriptor, and stops once every one of
// pids is found (a live child os/exec waits for, the common case).
func heldPidfds(pids []int) map[int]bool {
	dir := "/proc/self/fdinfo"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	want := map[int]bool{}
	for _, pid := range pids {
		want[pid] = true
	}
	held := map[int]bool{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, l := range bytes.Split(b, []byte{'\n'}) {
			if v, ok := bytes.CutPrefix(l, []byte("Pid:\t")); ok {
				if pid, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil && want[pid] {
					held[pid] = true
				}
			}
		}
		if len(held) == len(want) {
			break
		}
	}
	return held
}

// pidfdsShown reports whether a pidfd shows its process in fdinfo (and
// so whether os/exec's children can be told from adopted ones).
func pidfdsShown() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return heldPidfds([]int{os.Getpid()})[os.Getpid()]
}
