package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/acp-agent/acp-agent/internal/errcode"
	"github.com/acp-agent/acp-agent/internal/ownpaths"
)

// Code is a stable failure code of this package.
type Code string

// Codes.
const (
	// CodeLeavesRoot: the path, as written or through a symlink on the
	// way, resolves outside its root.
	CodeLeavesRoot Code = "PATH_LEAVES_ROOT"
	// CodeNotRealDir: a component RealDirs needs as a directory is a
	// symlink or not a directory.
	CodeNotRealDir Code = "PATH_NOT_A_REAL_DIRECTORY"
	// CodeTooLarge: a file is larger than the bound the caller gave.
	CodeTooLarge Code = "PATH_FILE_TOO_LARGE"
)

// Error is this package's typed error.
type Error = errcode.Coded[Code]

// Root is a directory every path of the agent's own file work is resolved
// beneath. It holds an open handle on the directory: a rename or symlink
// swap of the directory's own path after Open does not move it.
type Root struct {
	r   *os.Root
	dir string
}

// Open opens dir (absolute) as a root.
func Open(dir string) (*Root, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("beneath: root %q is not absolute", dir)
	}
	dir = filepath.Clean(dir)
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Root{r: r, dir: dir}, nil
}

// Close releases the root's handle.
func (r *Root) Close() error { return r.r.Close() }

// Dir is the root's path as given to Open (cleaned).
func (r *Root) Dir() string { return r.dir }

// Rel returns name relative to the root: name is either relative already
// or an absolute path lexically below the root. An absolute path that is
// not below it is a CodeLeavesRoot error.
func (r *Root) Rel(name string) (string, error) {
	if !filepath.IsAbs(name) {
		return filepath.Clean(name), nil
	}
	name = filepath.Clean(name)
	if name == r.dir {
		return ".", nil
	}
	prefix := strings.TrimSuffix(r.dir, string(filepath.Separator)) + string(filepath.Separator)
	if !strings.HasPrefix(name, prefix) {
		return "", r.leaves(name, nil)
	}
	return strings.TrimPrefix(name, prefix), nil
}

// Abs is name (relative to the root) as an absolute path, for messages
// and for programs that take paths (git).
func (r *Root) Abs(name string) string {
	if filepath.IsAbs(name) {
		return filepath.Clean(name)
	}
	return filepath.Join(r.dir, name)
}

func (r *Root) leaves(name string, err error) error {
	return &Error{Code: CodeLeavesRoot, Message: fmt.Sprintf("%s is refused: it resolves outside %s (a symlink or \"..\" on the way leads out)", r.Abs(name), r.dir), Err: err}
}

// classify turns an os.Root failure into what the caller can branch on:
// a missing file, a lack of permission and the like keep their errno; an
// escape (os.Root reports it with no errno) or a symlink loop is
// CodeLeavesRoot.
func (r *Root) classify(name string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != syscall.ELOOP && errno != syscall.EXDEV {
		return err
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrClosed) {
		return err
	}
	return r.leaves(name, err)
}

// Open opens name for reading, beneath the root.
func (r *Root) Open(name string) (*os.File, error) {
	rel, err := r.Rel(name)
	if err != nil {
		return nil, err
	}
	f, err := r.r.Open(rel)
	return f, r.classify(name, err)
}

// OpenFile opens name with flag and perm, beneath the root.
func (r *Root) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	rel, err := r.Rel(name)
	if err != nil {
		return nil, err
	}
	f, err := r.r.OpenFile(rel, flag, perm)
	return f, r.classify(name, err)
}

// ReadFile reads name beneath the root; a file larger than max bytes
// (max > 0) is a CodeTooLarge error.
func (r *Root) ReadFile(name string, max int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rd io.Reader = f
	if max > 0 {
		rd = io.LimitReader(f, max+1)
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	if max > 0 && int64(len(data)) > max {
		return nil, errcode.New(CodeTooLarge, fmt.Sprintf("%s is larger than %d bytes", r.Abs(name), max))
	}
	return data, nil
}

// ReadDir lists the directory name beneath the root.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// Lstat describes name beneath the root without following its last
// component.
func (r *Root) Lstat(name string) (fs.FileInfo, error) {
	rel, err := r.Rel(name)
	if err != nil {
		return nil, err
	}
	fi, err := r.r.Lstat(rel)
	return fi, r.classify(name, err)
}

// Remove removes the file or empty directory name beneath the root (its
// last component is removed, not followed). A claim the agent holds on it
// (RealDirs) is released first: its creator is done with it.
func (r *Root) Remove(name string) error {
	rel, err := r.Rel(name)
	if err != nil {
		return err
	}
	err = r.r.Remove(rel)
	if err == nil {
		// Released after the removal: a claim's handle keeps the inode, so
		// the path no longer names it; release by the handle's record.
		ownpaths.ReleaseRemoved(r.Abs(name))
	}
	return r.classify(name, err)
}

// RemoveAll removes name and everything below it, beneath the root (a
// symlink inside is removed, not followed).
func (r *Root) RemoveAll(name string) error {
	rel, err := r.Rel(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return r.leaves(name, errors.New("the root itself"))
	}
	return r.classify(name, r.r.RemoveAll(rel))
}

// CreateExcl creates name with data; it fails with fs.ErrExist when
// anything (a symlink included) is already at that name.
func (r *Root) CreateExcl(name string, data []byte, perm fs.FileMode) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = r.Remove(name)
	}
	return werr
}

// WriteFileAtomic replaces name with data: a temporary file beside it,
// fsync, rename, all beneath the root. A symlink at name is replaced, not
// followed.
func (r *Root) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	rel, err := r.Rel(name)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tmp-acp-agent")
	_ = r.r.Remove(tmp)
	f, err := r.r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return r.classify(name, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = r.classify(name, r.r.Rename(tmp, rel))
	}
	if werr != nil {
		_ = r.r.Remove(tmp)
	}
	return werr
}

// RealDirs makes sure every component of the relative path name is a
// real directory beneath the root (not a symlink, not a file), creating
// the missing ones with perm. Each directory it creates is claimed
// (internal/ownpaths) while it is made, so a sandboxed command's check
// does not take it for the command's. It returns what it created, in
// order; on failure it removes that again. A symlink on the way is a
// CodeNotRealDir error even when it points inside the root: the agent
// later deletes from these folders, and must delete only what it made.
func (r *Root) RealDirs(name string, perm fs.FileMode) (created []string, err error) {
	rel, err := r.Rel(name)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, nil
	}
	if strings.HasPrefix(rel, "..") {
		return nil, r.leaves(name, nil)
	}
	undo := func() {
		for i := len(created) - 1; i >= 0; i-- {
			_ = r.r.Remove(created[i])
		}
		created = nil
	}
	cur := ""
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		cur = filepath.Join(cur, part)
		fi, lerr := r.r.Lstat(cur)
		switch {
		case lerr == nil:
		case errors.Is(lerr, fs.ErrNotExist):
			end := ownpaths.Begin(r.Abs(cur))
			merr := r.r.Mkdir(cur, perm)
			end(merr == nil)
			if merr == nil {
				created = append(created, cur)
				continue
			}
			if !errors.Is(merr, fs.ErrExist) {
				undo()
				return nil, r.classify(cur, merr)
			}
			// Made by someone else meanwhile: judge it like any other.
			if fi, lerr = r.r.Lstat(cur); lerr != nil {
				undo()
				return nil, r.classify(cur, lerr)
			}
		default:
			undo()
			return nil, r.classify(cur, lerr)
		}
		if !fi.IsDir() {
			undo()
			what := "a file"
			if fi.Mode()&fs.ModeSymlink != 0 {
				what = "a symlink"
			}
			return nil, errcode.New(CodeNotRealDir, fmt.Sprintf("%s is refused: it is %s, and the agent keeps its own files only in real directories it made (remove it, or move it aside)", r.Abs(cur), what))
		}
	}
	abs := make([]string, len(created))
	for i, c := range created {
		abs[i] = r.Abs(c)
	}
	return abs, nil
}

// CheckRealDirs reports, without creating anything, whether every
// existing component of name is a real directory (a missing one is fine).
func (r *Root) CheckRealDirs(name string) error {
	rel, err := r.Rel(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		cur = filepath.Join(cur, part)
		fi, lerr := r.r.Lstat(cur)
		if errors.Is(lerr, fs.ErrNotExist) {
			return nil
		}
		if lerr != nil {
			return r.classify(cur, lerr)
		}
		if !fi.IsDir() {
			return errcode.New(CodeNotRealDir, fmt.Sprintf("%s is refused: it is not a real directory (a symlink or a file)", r.Abs(cur)))
		}
	}
	return nil
}

// ReadFile reads path (absolute) beneath root, opening and closing the
// root: the one call for a single read.
func ReadFile(root, path string, max int64) ([]byte, error) {
	r, err := Open(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(path, max)
}

// Leaves reports whether err is a CodeLeavesRoot or CodeNotRealDir
// refusal.
func Leaves(err error) bool {
	return errcode.Has(err, CodeLeavesRoot) || errcode.Has(err, CodeNotRealDir)
}
