package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/internal/ownpaths"
)

// QuarantineSuffix is added to the name of a protected path a sandboxed
// command created: git looks for ".git" and the editors for ".vscode",
// ".zed" and ".idea" by their exact names, so the moved entry is inert,
// and the person can look at it and move it back.
const QuarantineSuffix = ".acp-agent-quarantine"

// Moved is a protected path that a sandboxed command created, and the
// name the agent moved it to.
type Moved struct {
	Path string `json:"path"`
	To   string `json:"to"`
}

// Guard is what Prepare saw before a command: the protected paths that
// existed under its writable roots. The mount namespace keeps those
// read-only, but it cannot keep a name that does not exist yet: a bind
// mount needs an existing mount point, and covering the whole root (a
// tmpfs with the entries bound back) would lose every new top-level file
// the command writes. So Watch looks while the command runs, and Check
// once it is over.
type Guard struct {
	// roots are walked again after the command: the writable roots but
	// the temp dir, shared by every process of the user (a repository
	// another program makes there is not the command's).
	roots, extra []string
	// before holds the files that were protected paths before the
	// command, by device and inode: a directory the command renamed with
	// a protected path inside (a mount point moves with its parent) is
	// still the one that was read-only, not a new one.
	before map[fileID]bool
	// temp is the temp dir, and beforeLinks the links to a repository
	// outside the roots that were there before the command (planted.go).
	temp        string
	beforeLinks map[linkKey]bool

	// mu serialises the looks of Watch and Check; moved is what they
	// moved aside so far.
	mu    sync.Mutex
	moved []Moved
}

type fileID struct{ dev, ino uint64 }

func idOf(p string) (fileID, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

// newGuard is the guard of roots, given the protected paths and the
// links to a repository outside (plant.found of a walk with
// newPlantScope(roots, temp)) that existed before the command.
func newGuard(roots, extra, existing []string, temp string, links map[string]linkKey) *Guard {
	g := &Guard{roots: roots, extra: extra, before: make(map[fileID]bool, len(existing)),
		temp: temp, beforeLinks: make(map[linkKey]bool, len(links))}
	for _, p := range existing {
		if id, ok := idOf(p); ok {
			g.before[id] = true
		}
	}
	for _, k := range links {
		g.beforeLinks[k] = true
	}
	return g
}

// Check walks the roots again, after every process of the command is
// gone, and moves each protected path that was not there before to its
// name with QuarantineSuffix (then -2, -3, … should that be taken) beside
// it. It returns everything moved aside for the command, by Watch too,
// even with an error; an error means some new protected path may be left
// (the walk hit its bound, or a move failed). A nil Guard checks nothing.
func (g *Guard) Check() ([]Moved, error) {
	if g == nil {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.look()
	return slices.Clone(g.moved), err
}

// look moves aside what is new since Prepare; g.mu is held.
func (g *Guard) look() error {
	plant := newPlantScope(g.roots, g.temp)
	after, _, ok := walkProtected(g.roots, g.extra, false, plant)
	var errs []error
	if !ok {
		errs = append(errs, fmt.Errorf("more than %d entries under the writable directories: new protected paths may be left", maxProtectWalk))
	}
	for _, p := range after {
		if id, ok := idOf(p); ok && g.before[id] {
			continue
		}
		if ownpaths.Claimed(p) {
			continue // the agent's own (a subagent's worktree folder)
		}
		to, err := quarantine(g.roots, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("move %s aside: %w", p, err))
			continue
		}
		g.moved = append(g.moved, Moved{Path: p, To: to})
	}
	// In walk order, like the protected paths above.
	var links []string
	for p := range plant.found {
		links = append(links, p)
	}
	slices.Sort(links)
	for _, p := range links {
		if g.beforeLinks[plant.found[p]] {
			continue
		}
		to, err := quarantine(g.roots, p) // renames the link, not its target
		if err != nil {
			errs = append(errs, fmt.Errorf("move %s (a symlink to a repository outside) aside: %w", p, err))
			continue
		}
		g.moved = append(g.moved, Moved{Path: p, To: to})
	}
	return errors.Join(errs...)
}

// Watch moves aside, while the command still runs, a protected path it
// creates at the top of a guarded root or where a configured protected
// path belongs: that is where the editors and git look, and an editor's
// git integration runs git status in a new repository soon after it
// appears. It watches those directories with inotify and looks as Check
// does on each protected name created or moved there; deeper paths wait
// for Check. The returned func ends the watch. Without inotify it does
// nothing (Check still moves everything aside at the end).
func (g *Guard) Watch() (stop func()) {
	if g == nil {
		return func() {}
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return func() {}
	}
	names := policy.ProtectedNames()
	dirs := slices.Clone(g.roots)
	for _, e := range g.extra {
		if e != "" {
			names[strings.ToLower(filepath.Base(e))] = true
			dirs = append(dirs, filepath.Dir(e))
		}
	}
	for _, d := range dirs {
		// A missing directory (an extra's parent) is not watched.
		_, _ = unix.InotifyAddWatch(fd, d, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
	}
	// Non-blocking, so the runtime's poller serves Read and Close ends it.
	f := os.NewFile(uintptr(fd), "inotify")
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if createdName(buf[:n], names) {
				g.mu.Lock()
				_ = g.look() // an error is Check's to report
				g.mu.Unlock()
			}
		}
	}()
	return func() {
		_ = f.Close()
		<-done
	}
}

// createdName reports whether the inotify events in b name one of names
// (a queue overflow counts: what it lost may have).
func createdName(b []byte, names map[string]bool) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return false
		}
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			return true
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		if names[strings.ToLower(name)] {
			return true
		}
		b = b[end:]
	}
	return false
}

// maxQuarantined bounds the moved-aside copies kept of one path: a
// command that creates the same protected path again and again (on
// purpose or in a loop) cannot fill the disk with copies, nor run the
// names out so that the next one stays.
const maxQuarantined = 20

// quarantine renames p, which lies under one of roots, to a free name
// with QuarantineSuffix; when maxQuarantined copies of p are kept
// already, the one moved aside longest ago (oldest change time: a rename
// sets it) is removed for the new one. The rename goes through an
// os.Root at the innermost root holding p, so a directory on the way that
// was swapped for a symlink cannot move it outside; the last element is
// renamed, not followed.
func quarantine(roots []string, p string) (string, error) {
	root := ""
	for _, r := range roots {
		if (p == r || strings.HasPrefix(p, r+string(filepath.Separator))) && len(r) > len(root) {
			root = r
		}
	}
	rel, err := filepath.Rel(root, p)
	if root == "" || err != nil || rel == "." {
		return "", errors.New("not under a writable directory")
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	oldest, oldestAt := "", int64(0)
	for i := 1; i <= maxQuarantined; i++ {
		to := rel + QuarantineSuffix
		if i > 1 {
			to += "-" + strconv.Itoa(i)
		}
		fi, err := r.Lstat(to)
		if errors.Is(err, fs.ErrNotExist) {
			if err := r.Rename(rel, to); err != nil {
				return "", err
			}
			return filepath.Join(root, to), nil
		}
		if err != nil {
			return "", err
		}
		at := fi.ModTime().UnixNano()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			at = st.Ctim.Nano()
		}
		if oldest == "" || at < oldestAt {
			oldest, oldestAt = to, at
		}
	}
	if err := r.RemoveAll(oldest); err != nil {
		return "", fmt.Errorf("make room among %d moved-aside copies: %w", maxQuarantined, err)
	}
	if err := r.Rename(rel, oldest); err != nil {
		return "", err
	}
	return filepath.Join(root, oldest), nil
}
