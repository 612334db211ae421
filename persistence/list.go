package persistence

// This file defines List: the header-only scan of the session directory.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

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
	out, bad, err := s.Scan(ctx)
	if err != nil {
		return nil, err
	}
	for _, u := range bad {
		s.log.Warn("skipping unreadable session file", "session_id", u.ID, "path", u.Path, "problem", u.Problem, "err", u.Err)
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

// readEntry reads the header line of one session file into buf. It never
// blocks on a special file (see openRegular); a file that is not a session
// log is an *UnreadableError.
func readEntry(path, id string, buf []byte) (Entry, error) {
	f, st, err := openRegular(id, path, os.O_RDONLY)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	line, err := firstLine(f, buf)
	if err != nil {
		return Entry{}, headerProblem(id, path, st.Size(), err)
	}
	h, err := session.ParseHeaderLine(line, id)
	if err != nil {
		return Entry{}, headerProblem(id, path, st.Size(), err)
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
