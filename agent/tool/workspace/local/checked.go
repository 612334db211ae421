package local

// This file opens exactly what the gate decided on (workspace.CheckedFiles):
// a path inside the cwd through an os.Root of the real cwd, so that every
// component is resolved under the root's handle and a symlink or ".."
// leading out fails, whatever was swapped in after the check; an allowed
// outside path with O_NOFOLLOW on the final component and its identity
// compared after open. A file that gained a second hard link since the
// check counts as changed.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

var _ workspace.CheckedFiles = Files{}

// ReadChecked reads the file p names as ReadTextFile does, opened as
// checked.
func (f Files) ReadChecked(ctx context.Context, p workspace.Path, line, limit int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if line < 0 || limit < 0 {
		return "", &tool.Error{Code: tool.CodeInvalidArgs, Message: "line and limit must not be negative"}
	}
	file, err := openChecked(p, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", p.Abs, err)
	}
	if !info.Mode().IsRegular() {
		return "", notRegular(p.Abs, info.Mode())
	}
	return f.readOpen(ctx, file, info, p.Abs, line, limit)
}

// readOpen reads an open regular file (ReadTextFile's rules).
func (f Files) readOpen(ctx context.Context, file *os.File, info fs.FileInfo, path string, line, limit int) (string, error) {
	max := f.maxRead()
	br := bufio.NewReaderSize(file, 64<<10)
	head, _ := br.Peek(sniffBytes)
	if bytes.IndexByte(head, 0) >= 0 {
		return "", &tool.Error{Code: workspace.CodeBinaryFile, Message: fmt.Sprintf("%s is a binary file; only text files can be read", path)}
	}
	if line <= 1 && limit == 0 {
		if info.Size() > max {
			return "", tooLarge(path, info.Size(), max)
		}
		data, err := io.ReadAll(io.LimitReader(br, max+1))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		if int64(len(data)) > max {
			return "", tooLarge(path, int64(len(data)), max)
		}
		return string(data), nil
	}
	return readWindow(ctx, br, path, line, limit, max)
}

// WriteChecked replaces the content of the file p names, opened as
// checked; the file is truncated only after the check of what was opened.
func (f Files) WriteChecked(ctx context.Context, p workspace.Path, content string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	file, err := openChecked(p, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	info, err := file.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = notRegular(p.Abs, info.Mode())
	}
	if err == nil {
		err = file.Truncate(0)
	}
	if err == nil {
		_, err = file.WriteString(content)
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	var te *tool.Error
	if err != nil && !errors.As(err, &te) {
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	return err
}

// openChecked opens p as the gate checked it. flag never holds O_TRUNC
// (the caller truncates after its own checks); O_CREATE creates missing
// parent directories too.
func openChecked(p workspace.Path, flag int, perm fs.FileMode) (*os.File, error) {
	// O_NONBLOCK: a FIFO swapped in fails instead of blocking.
	flag |= syscall.O_NONBLOCK
	create := flag&os.O_CREATE != 0
	if !p.OutsideCwd {
		return openInside(p, flag, perm, create)
	}
	if create {
		if err := os.MkdirAll(filepath.Dir(p.Real), 0o755); err != nil {
			return nil, fmt.Errorf("create the directory of %s: %w", p.Abs, err)
		}
		if !p.ID.Exists {
			// It did not exist when asked: it must still not exist.
			flag |= os.O_EXCL
		} else {
			flag &^= os.O_CREATE
		}
	}
	file, err := os.OpenFile(p.Real, flag|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return nil, openError(p, err)
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("stat %s: %w", p.Abs, err)
	}
	if p.ID.Exists && workspace.IdentityOf(info) != p.ID {
		file.Close()
		return nil, workspace.PathChanged(p.Abs, "another file is at its place now")
	}
	return file, nil
}

// openInside opens p relative to the real cwd through os.Root and refuses
// a file that has more than one hard link.
func openInside(p workspace.Path, flag int, perm fs.FileMode, create bool) (*os.File, error) {
	base := p.Base()
	rel, err := filepath.Rel(base, p.Real)
	if err != nil || base == "" {
		return nil, workspace.PathChanged(p.Abs, "its place in the working directory is unknown")
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		if p.Root != "" {
			return nil, fmt.Errorf("open the additional directory %s: %w", p.Root, err)
		}
		return nil, fmt.Errorf("open the working directory %s: %w", p.Cwd, err)
	}
	defer root.Close()
	if create && filepath.Dir(rel) != "." {
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return nil, openError(p, err)
		}
	}
	file, err := root.OpenFile(rel, flag, perm)
	if err != nil {
		return nil, openError(p, err)
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("stat %s: %w", p.Abs, err)
	}
	if workspace.MultiplyLinked(info) {
		file.Close()
		return nil, workspace.PathChanged(p.Abs, "it is a hard link now, which may be a file outside the working directory")
	}
	return file, nil
}

// openError classifies a failed open: a missing file is FILE_NOT_FOUND,
// a directory or FIFO NOT_REGULAR_FILE; anything else that stops the
// open (an escape from the root, a symlink on the final component, a
// file created in the meantime) is PATH_CHANGED, except a plain lack of
// permission.
func openError(p workspace.Path, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &tool.Error{Code: workspace.CodeFileNotFound, Message: fmt.Sprintf("%s does not exist", p.Abs), Err: err}
	case errors.Is(err, syscall.EISDIR):
		return notRegular(p.Abs, fs.ModeDir)
	case errors.Is(err, syscall.ENXIO):
		return notRegular(p.Abs, fs.ModeNamedPipe)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("open %s: %w", p.Abs, err)
	}
	e := workspace.PathChanged(p.Abs, "a symlink or another file is at its place now")
	e.Err = err
	return e
}
