package workspace

// This file holds the second half of the path rules: the object the gate
// decided on is the object used. ResolvePath records what it checked (the
// real cwd, the file's identity, its link count); Files implementations
// that can (CheckedFiles) open exactly that object, and fail with
// CodePathChanged when the path now names something else.

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/acp-agent/acp-agent/agent/tool"
)

// CodePathChanged: the path no longer names the object that was checked
// (it was replaced, for example by a symlink or a hard link leading out
// of the working directory, between the check and the use); nothing was
// read or written.
const CodePathChanged = "PATH_CHANGED"

// FileID identifies a file at the time it was checked.
type FileID struct {
	// Exists is set when the file existed; Dev and Ino are then its
	// device and inode.
	Exists   bool
	Dev, Ino uint64
}

// CheckedFiles is implemented by Files that open exactly the object a
// Path check decided on: a path inside the cwd through an os.Root of the
// real cwd (an escape through ".." or a symlink fails, race-free), an
// allowed outside path with O_NOFOLLOW on its final component and an
// identity re-check after open.
type CheckedFiles interface {
	ReadChecked(ctx context.Context, p Path, line, limit int) (string, error)
	WriteChecked(ctx context.Context, p Path, content string) error
}

// ReadFile reads the file p names through f, checked when f can.
func ReadFile(ctx context.Context, f Files, p Path, line, limit int) (string, error) {
	if c, ok := f.(CheckedFiles); ok {
		return c.ReadChecked(ctx, p, line, limit)
	}
	return f.ReadTextFile(ctx, p.Abs, line, limit)
}

// WriteFile writes the file p names through f, checked when f can.
func WriteFile(ctx context.Context, f Files, p Path, content string) error {
	if c, ok := f.(CheckedFiles); ok {
		return c.WriteChecked(ctx, p, content)
	}
	return f.WriteTextFile(ctx, p.Abs, content)
}

// Recheck resolves p again and fails with CodePathChanged when the result
// differs from what was checked (inside/outside, identity). It narrows,
// but cannot close, the window for Files that open by name elsewhere (the
// editor's fs/*).
func Recheck(p Path) error {
	var roots []string
	if p.Root != "" {
		roots = []string{p.Root}
	}
	now, err := ResolvePathIn(p.Cwd, roots, p.Abs)
	if err != nil {
		return err
	}
	if now.OutsideCwd != p.OutsideCwd || now.Root != p.Root || now.Real != p.Real || now.ID != p.ID {
		return PathChanged(p.Abs, "it was replaced after it was checked")
	}
	return nil
}

// PathChanged is the CodePathChanged error for path.
func PathChanged(path, why string) *tool.Error {
	return &tool.Error{Code: CodePathChanged, Message: fmt.Sprintf(
		"%s is no longer the file that was checked (%s); nothing was done. Check the path and try again.", path, why)}
}

// MultiplyLinked reports whether info is a regular file with more than
// one hard link: one of its names may lie outside the working directory,
// so it counts as outside. Tools that visit many files (grep) call it per
// file.
func MultiplyLinked(info fs.FileInfo) bool {
	return info != nil && info.Mode().IsRegular() && linkCount(info) > 1
}

// IdentityOf returns the identity of info (zero when info is nil).
func IdentityOf(info fs.FileInfo) FileID {
	if info == nil {
		return FileID{}
	}
	dev, ino := devIno(info)
	return FileID{Exists: true, Dev: dev, Ino: ino}
}
