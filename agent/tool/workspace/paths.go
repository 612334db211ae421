package workspace

// This file holds the path rules every workspace tool shares: paths are
// resolved against the session cwd, and a path whose real location (after
// "..", and symlinks on the deepest existing ancestor) lies outside the
// real cwd is flagged so that the call asks for an explicit permission.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/acp-agent/acp-agent/agent/tool"
)

// Path is a tool argument resolved against the session cwd.
type Path struct {
	// Abs is the cleaned absolute path the tool operates on (".." already
	// applied lexically, symlinks kept so the editor shows the name the
	// model used).
	Abs string
	// Real is Abs with symlinks resolved on its deepest existing
	// ancestor; it is what the outside-cwd check compares.
	Real string
	// OutsideCwd is set when Real is not the real cwd or below it, when
	// the real location could not be established, or when the file has
	// more than one hard link (Linked).
	OutsideCwd bool
	// Linked is set when the file is a regular file with more than one
	// hard link: another of its names may lie outside the cwd.
	Linked bool
	// Cwd and RealCwd are the session cwd as given and with symlinks
	// resolved; an inside path is opened relative to RealCwd (os.Root).
	Cwd, RealCwd string
	// Root, for a path outside the cwd but inside one of the session's
	// additional roots, is that root with symlinks resolved: the path is
	// inside the boundary and opened relative to Root instead (Base).
	Root string
	// ID is the identity of the file at Real when it was checked.
	ID FileID
}

// ResolvePath resolves p (absolute, or relative to cwd) and decides
// whether it lies outside cwd. It fails only on an empty path or a cwd
// that is not absolute. The check is made on exactly the path the tool
// then uses (Abs), so a lexical ".." cannot point the check and the
// operation at different files.
func ResolvePath(cwd, p string) (Path, error) {
	if strings.TrimSpace(p) == "" {
		return Path{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "path is empty"}
	}
	if strings.ContainsRune(p, 0) {
		return Path{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "path contains a NUL byte"}
	}
	if !filepath.IsAbs(cwd) {
		return Path{}, fmt.Errorf("workspace: session cwd %q is not absolute", cwd)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, abs)
	}
	abs = filepath.Clean(abs)
	realCwd, errCwd := realPath(filepath.Clean(cwd))
	real, errP := realPath(abs)
	out := Path{Abs: abs, Real: real, Cwd: filepath.Clean(cwd), RealCwd: realCwd}
	// A location we could not establish is treated as outside: it is
	// never touched without an explicit permission.
	out.OutsideCwd = errCwd != nil || errP != nil || !Within(realCwd, real)
	if errP == nil {
		if info, err := os.Lstat(real); err == nil {
			out.ID = IdentityOf(info)
			// A hard link is one inode under several names; one of them
			// may be outside the cwd, so the file counts as outside.
			out.Linked = MultiplyLinked(info)
			out.OutsideCwd = out.OutsideCwd || out.Linked
		}
	}
	return out, nil
}

// ResolvePathIn is ResolvePath for a session with additional workspace
// roots (absolute directories): a path outside cwd whose real location
// lies in one of them is inside the boundary too, with Root set to that
// root. A hard-linked file stays outside.
func ResolvePathIn(cwd string, roots []string, p string) (Path, error) {
	out, err := ResolvePath(cwd, p)
	if err != nil || !out.OutsideCwd || out.Linked || len(roots) == 0 {
		return out, err
	}
	real, err := realPath(out.Abs)
	if err != nil {
		return out, nil
	}
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			continue
		}
		realRoot, err := realPath(filepath.Clean(r))
		if err != nil {
			continue
		}
		if Within(realRoot, real) {
			out.OutsideCwd, out.Root = false, realRoot
			return out, nil
		}
	}
	return out, nil
}

// Resolve resolves p against the environment's cwd and roots.
func (e Env) Resolve(p string) (Path, error) { return ResolvePathIn(e.Cwd, e.Roots, p) }

// Base is the directory an inside path is opened relative to: its
// additional root, else the real cwd.
func (p Path) Base() string {
	if p.Root != "" {
		return p.Root
	}
	return p.RealCwd
}

// Within reports whether p is dir or lies below it; both must be clean
// absolute paths.
func Within(dir, p string) bool {
	if p == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return strings.HasPrefix(p, dir)
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// realPath resolves symlinks on the deepest existing ancestor of the
// clean absolute path p and appends the components that do not exist yet
// (which cannot be symlinks). Only a missing component or a non-directory
// parent lets the walk go up; any other failure (permission denied, a
// symlink loop) is returned, and the caller treats the path as outside.
func realPath(p string) (string, error) {
	var rest []string
	cur := p
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return p, err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			// cur exists but does not resolve: a dangling symlink, whose
			// target a create would follow. Its real location is unknown.
			return p, fmt.Errorf("workspace: %s does not resolve: %w", cur, err)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, err
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

// DisplayPath renders abs for the model: relative to cwd when inside it,
// absolute otherwise.
func DisplayPath(cwd, abs string) string {
	cwd = filepath.Clean(cwd)
	if Within(cwd, abs) {
		if rel, err := filepath.Rel(cwd, abs); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return abs
}

// IsNotExist reports whether err says the file does not exist. Files
// implementations (local and through the client) wrap fs.ErrNotExist or
// return a *tool.Error with CodeFileNotFound for a missing file.
func IsNotExist(err error) bool {
	var te *tool.Error
	if errors.As(err, &te) && te.Code == CodeFileNotFound {
		return true
	}
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist)
}
