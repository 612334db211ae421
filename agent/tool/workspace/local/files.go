package local

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

// DefaultMaxReadBytes caps one read (a whole file, or one line window).
const DefaultMaxReadBytes = 10 << 20

// sniffBytes is how much of a file is checked for NUL bytes.
const sniffBytes = 8000

// Files reads and writes files on this machine by absolute path.
type Files struct {
	// MaxReadBytes caps one read; 0 means DefaultMaxReadBytes.
	MaxReadBytes int64
}

var _ workspace.Files = Files{}

func (f Files) maxRead() int64 {
	if f.MaxReadBytes > 0 {
		return f.MaxReadBytes
	}
	return DefaultMaxReadBytes
}

// ReadTextFile returns the whole file (line and limit zero) or the window
// of limit lines starting at line (1-based; limit 0 means to the end).
// Lines keep their terminators, so a window is an exact slice of the
// file. It refuses non-regular and binary files and reads over the cap.
func (f Files) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if line < 0 || limit < 0 {
		return "", &tool.Error{Code: tool.CodeInvalidArgs, Message: "line and limit must not be negative"}
	}
	file, info, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	return f.readOpen(ctx, file, info, path, line, limit)
}

// readWindow returns lines [line, line+limit) of r, without holding more
// than max bytes of them; lines before the window are skipped without
// being kept.
func readWindow(ctx context.Context, r *bufio.Reader, path string, line, limit int, max int64) (string, error) {
	if line < 1 {
		line = 1
	}
	var out bytes.Buffer
	n := 0 // lines fully or partly consumed
	inLine := false
	for limit == 0 || n < line-1+limit {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			if n+1 >= line {
				if int64(out.Len()+len(chunk)) > max {
					return "", &tool.Error{Code: workspace.CodeFileTooLarge, Message: fmt.Sprintf(
						"the selected lines of %s are over the %d-byte limit; read fewer lines", path, max)}
				}
				out.Write(chunk)
			}
			inLine = chunk[len(chunk)-1] != '\n'
			if !inLine {
				n++
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return out.String(), nil
		default:
			return "", fmt.Errorf("read %s: %w", path, err)
		}
	}
	return out.String(), nil
}

// WriteTextFile replaces the file's content, creating it and its parent
// directories if needed. An existing file keeps its mode; a non-regular
// one is refused.
func (f Files) WriteTextFile(ctx context.Context, path, content string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return notRegular(path, info.Mode())
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create the directory of %s: %w", path, err)
	}
	// O_NONBLOCK: a FIFO swapped in after the check fails instead of
	// blocking until a reader appears.
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if info, err := file.Stat(); err == nil && !info.Mode().IsRegular() {
		file.Close()
		return notRegular(path, info.Mode())
	}
	_, werr := file.WriteString(content)
	cerr := file.Close()
	if werr != nil {
		return fmt.Errorf("write %s: %w", path, werr)
	}
	if cerr != nil {
		return fmt.Errorf("write %s: %w", path, cerr)
	}
	return nil
}

// openRegular opens path for reading without blocking on a FIFO or
// device, and refuses anything but a regular file.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, &tool.Error{Code: workspace.CodeFileNotFound, Message: fmt.Sprintf("%s does not exist", path), Err: err}
		}
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		file.Close()
		return nil, nil, notRegular(path, info.Mode())
	}
	return file, info, nil
}

func notRegular(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	return &tool.Error{Code: workspace.CodeNotRegularFile, Message: fmt.Sprintf("%s is %s, not a regular file", path, what)}
}

func tooLarge(path string, size, max int64) error {
	return &tool.Error{Code: workspace.CodeFileTooLarge, Message: fmt.Sprintf(
		"%s is %d bytes, over the %d-byte limit for reading a whole file; read it in pages of lines", path, size, max)}
}
