package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Anywhere is the anchor of files read without a root: the person's own
// folders, whose files may link anywhere.
const Anywhere = ""

// ErrOutside is returned for a path that is not below its anchor.
var ErrOutside = errors.New("path is not beneath its anchor directory")

// Roots is the resolver for reads that may span several anchors (agent
// definitions and skills, read beneath the top of the project walk or,
// for the person's own folders, anywhere). Each anchor is a Root of this
// package, so these reads refuse what every other Root refuses.
//
// Roots opens anchors on demand and keeps them open until Close. It is
// safe for concurrent use.
type Roots struct {
	mu    sync.Mutex
	roots map[string]*rootEntry
}

type rootEntry struct {
	root *Root
	err  error
}

// NewRoots returns an empty set of anchors.
func NewRoots() *Roots { return &Roots{roots: map[string]*rootEntry{}} }

// Close closes every anchor opened.
func (r *Roots) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, e := range r.roots {
		if e.root != nil {
			errs = append(errs, e.root.Close())
		}
	}
	r.roots = map[string]*rootEntry{}
	return errors.Join(errs...)
}

// open returns the root of anchor and path relative to it; for the anchor
// "" (Anywhere) a nil root and path itself.
func (r *Roots) open(anchor, path string) (*Root, string, error) {
	if anchor == Anywhere {
		if !filepath.IsAbs(path) {
			return nil, "", fmt.Errorf("beneath: %s must be absolute", path)
		}
		return nil, filepath.Clean(path), nil
	}
	anchor, path = filepath.Clean(anchor), filepath.Clean(path)
	if !filepath.IsAbs(anchor) || !filepath.IsAbs(path) {
		return nil, "", fmt.Errorf("beneath: %s and %s must be absolute", anchor, path)
	}
	rel, err := filepath.Rel(anchor, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, "", &fs.PathError{Op: "open", Path: path, Err: ErrOutside}
	}
	r.mu.Lock()
	e, ok := r.roots[anchor]
	if !ok {
		e = &rootEntry{}
		e.root, e.err = Open(anchor)
		r.roots[anchor] = e
	}
	r.mu.Unlock()
	if e.err != nil {
		return nil, "", e.err
	}
	return e.root, rel, nil
}

// ReadDir lists the directory path beneath anchor, sorted by name.
func (r *Roots) ReadDir(anchor, path string) ([]fs.DirEntry, error) {
	root, rel, err := r.open(anchor, path)
	if err != nil {
		return nil, err
	}
	f, err := openIn(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// Stat returns the file info of path beneath anchor, following symlinks
// that stay beneath it.
func (r *Roots) Stat(anchor, path string) (fs.FileInfo, error) {
	root, rel, err := r.open(anchor, path)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return os.Stat(rel)
	}
	fi, err := root.r.Stat(rel)
	return fi, root.classify(rel, err)
}

// openIn opens name beneath root (an escape is a CodeLeavesRoot error, as
// for every Root), or anywhere when root is nil.
func openIn(root *Root, name string) (*os.File, error) {
	if root == nil {
		return os.Open(name)
	}
	return root.Open(name)
}

// TooLargeError is a file larger than the limit a reader gave.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.Path, e.Limit)
}

// ReadFile reads the regular file path beneath anchor, at most limit
// bytes (a larger file is a *TooLargeError). buf, when not nil, is reused.
func (r *Roots) ReadFile(anchor, path string, limit int64, buf []byte) ([]byte, error) {
	root, rel, err := r.open(anchor, path)
	if err != nil {
		return nil, err
	}
	f, err := openIn(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	out := buf[:0]
	n, err := readAll(f, &out, limit+1)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return out, nil
}

func readAll(rd io.Reader, out *[]byte, limit int64) (int64, error) {
	lr := io.LimitReader(rd, limit)
	b := *out
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*out = b
			return int64(len(b)), nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Anchor returns the anchor to read path beneath: the first of anchors
// that path lies in (lexically), else path's own directory dir.
func Anchor(path string, anchors ...string) string {
	path = filepath.Clean(path)
	for _, a := range anchors {
		if a == "" {
			continue
		}
		a = filepath.Clean(a)
		if rel, err := filepath.Rel(a, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return a
		}
	}
	return path
}
