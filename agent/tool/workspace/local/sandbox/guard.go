package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
// the command writes. So Check looks again once the command is over.
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

func newGuard(roots, extra, existing []string) *Guard {
	g := &Guard{roots: roots, extra: extra, before: make(map[fileID]bool, len(existing))}
	for _, p := range existing {
		if id, ok := idOf(p); ok {
			g.before[id] = true
		}
	}
	return g
}

// Check walks the roots again, after every process of the command is
// gone, and moves each protected path that was not there before to its
// name with QuarantineSuffix (then -2, -3, … should that be taken) beside
// it. What it moved is returned even with an error; an error means some
// new protected path may be left (the walk hit its bound, or a move
// failed). A nil Guard checks nothing.
func (g *Guard) Check() ([]Moved, error) {
	if g == nil {
		return nil, nil
	}
	after, ok := protectedUnder(g.roots, g.extra)
	var moved []Moved
	var errs []error
	if !ok {
		errs = append(errs, fmt.Errorf("more than %d entries under the writable directories: new protected paths may be left", maxProtectWalk))
	}
	for _, p := range after {
		if id, ok := idOf(p); ok && g.before[id] {
			continue
		}
		to, err := quarantine(g.roots, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("move %s aside: %w", p, err))
			continue
		}
		moved = append(moved, Moved{Path: p, To: to})
	}
	return moved, errors.Join(errs...)
}

// quarantine renames p, which lies under one of roots, to a free name
// with QuarantineSuffix. The rename goes through an os.Root at the
// innermost root holding p, so a directory on the way that was swapped
// for a symlink cannot move it outside; the last element is renamed, not
// followed.
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
	for i := 1; i <= 100; i++ {
		to := rel + QuarantineSuffix
		if i > 1 {
			to += "-" + strconv.Itoa(i)
		}
		if _, err := r.Lstat(to); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err := r.Rename(rel, to); err != nil {
			return "", err
		}
		return filepath.Join(root, to), nil
	}
	return "", errors.New("no free quarantine name")
}
