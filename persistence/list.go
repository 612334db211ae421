package persistence

// This file defines List: the header-only scan of the session directory.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// List returns the header and file facts of every stored session, ordered
// by session id (the file name order). For each <id>.jsonl it opens the
// file, fstats it and reads only the header line (at most MaxHeaderLine
// bytes, usually one 4 KiB read), so its cost does not depend on log
// length. A file whose header cannot be read is skipped with a warning;
// only a failure to read the directory fails the listing. ctx is checked
// between files. Sessions created but not yet flushed are listed (creation
// writes the header eagerly).
func (s *Store) List(ctx context.Context) ([]Entry, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	names, err := readDirNames(s.dir)
	if err != nil {
		return nil, fmt.Errorf("persistence: list %s: %w", s.dir, err)
	}
	out := make([]Entry, 0, len(names))
	buf := make([]byte, MaxHeaderLine)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, ok := strings.CutSuffix(name, ".jsonl")
		if !ok || session.ValidateID(id) != nil {
			continue // temp files, .broken copies, strays
		}
		e, err := readEntry(filepath.Join(s.dir, name), id, buf)
		if err != nil {
			s.log.Warn("skipping unreadable session file", "session_id", id, "path", filepath.Join(s.dir, name), "err", err)
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// readDirNames returns the sorted names in dir.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// readEntry reads the header line of one session file into buf.
func readEntry(path, id string, buf []byte) (Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Entry{}, err
	}
	if !st.Mode().IsRegular() {
		return Entry{}, errors.New("not a regular file")
	}
	line, err := firstLine(f, buf)
	if err != nil {
		return Entry{}, err
	}
	h, err := session.ParseHeaderLine(line, id)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Header: h, Size: st.Size(), ModTime: st.ModTime().UnixMilli()}, nil
}

// firstLine reads up to the first newline, within len(buf) bytes. The
// first read asks for 4 KiB, enough for any real header, so a typical file
// costs one read system call.
func firstLine(r io.Reader, buf []byte) ([]byte, error) {
	n := 0
	for chunk := 4 << 10; n < len(buf); chunk = len(buf) - n {
		m, err := r.Read(buf[n:min(n+chunk, len(buf))])
		if i := bytes.IndexByte(buf[n:n+m], '\n'); i >= 0 {
			return buf[:n+i], nil
		}
		n += m
		if err == io.EOF || (err == nil && m == 0) {
			return nil, errors.New("no complete header line")
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("header line longer than %d bytes", len(buf))
}
