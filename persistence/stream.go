package persistence

// This file defines the streaming reader of a session file: Load decodes
// a log line by line through a fixed-size buffer instead of reading the
// whole file into memory first, so loading a large session holds the
// decoded events and not also the file's bytes. The line rules are those
// of decodeLog (doc.go "Torn tail versus corruption"): only the final line
// may be torn, every other defect is a *CorruptError; each line goes
// through the same checks (the event envelope's JSON, then
// session.ValidateEvent).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/acp-agent/acp-agent/agent/session"
)

// streamBuffer is the read buffer of streamLog; longer lines are
// assembled in a separate, growing slice.
const streamBuffer = 1 << 20

// lineReader yields the lines of a session file with their offsets.
type lineReader struct {
	r    *bufio.Reader
	long []byte // assembly buffer for lines longer than the read buffer
	off  int64  // offset of the next line
}

// next returns the next line without its newline, whether it was
// terminated, and its offset. At the end of the data it returns io.EOF.
// The line is valid until the next call.
func (lr *lineReader) next() (line []byte, terminated bool, off int64, err error) {
	off = lr.off
	line, err = lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, line...)
		}
		line = lr.long
	}
	lr.off += int64(len(line))
	switch {
	case err == nil:
		return line[:len(line)-1], true, off, nil
	case errors.Is(err, io.EOF):
		if len(line) == 0 {
			return nil, false, off, io.EOF
		}
		return line, false, off, nil
	default:
		return nil, false, off, err
	}
}

// atEOF reports whether nothing follows the line just read.
func (lr *lineReader) atEOF() bool {
	_, err := lr.r.Peek(1)
	return errors.Is(err, io.EOF)
}

// streamLog decodes the session file f from its start, line by line. It
// returns the same view as decodeLog on the file's bytes. sizeHint (the
// file size, or 0) sizes the event slice.
func streamLog(id, path string, f *os.File, sizeHint int64) (logView, error) {
	corrupt := func(line int, off int64, err error) error {
		return &CorruptError{ID: id, Path: path, Line: line, Offset: off, Err: err}
	}
	lr := &lineReader{r: bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), streamBuffer)}
	hdr, terminated, _, err := lr.next()
	if errors.Is(err, io.EOF) {
		return logView{}, corrupt(1, 0, errors.New("empty file: no header line"))
	}
	if err != nil {
		return logView{}, fmt.Errorf("persistence: read %s: %w", path, err)
	}
	if !terminated || len(hdr)+1 > MaxHeaderLine {
		return logView{}, corrupt(1, 0, fmt.Errorf("no complete header line within %d bytes", MaxHeaderLine))
	}
	h, err := session.ParseHeaderLine(hdr, id)
	if err != nil {
		return logView{}, corrupt(1, 0, err)
	}
	v := logView{header: h}
	good := lr.off
	// The events of a large log are held as long as the session is live:
	// size the slice once from the average line of the first lines rather
	// than let append double it (up to twice the slots, and copies).
	const sample = 1024
	presized := sizeHint <= 0
	for lineNo := 2; ; lineNo++ {
		line, terminated, off, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return logView{}, fmt.Errorf("persistence: read %s: %w", path, err)
		}
		if !terminated {
			// Unterminated final line: a write cut short.
			v.torn = true
			break
		}
		// The line is in the reader's reused buffer: the payload, which
		// decodeEnvelope leaves aliasing it, is copied out.
		ev, err := decodeEnvelope(line)
		if err != nil {
			if lr.atEOF() {
				v.torn = true
				break
			}
			return logView{}, corrupt(lineNo, off, err)
		}
		ev.Data = bytes.Clone(ev.Data)
		if err := session.ValidateEvent(ev, int64(len(v.events))); err != nil {
			return logView{}, corrupt(lineNo, off, err)
		}
		if !presized && len(v.events) == sample {
			presized = true
			perLine := (lr.off - int64(len(hdr)) - 1) / sample
			if want := sizeHint/max(perLine, 1) + sizeHint/max(perLine, 1)/16 + 16; want > int64(cap(v.events)) && want < 1<<26 {
				v.events = append(make([]session.Event, 0, want), v.events...)
			}
		}
		v.events = append(v.events, ev)
		good = lr.off
	}
	if len(v.events) == 0 {
		v.events = nil // as decodeLog: no events is a nil slice
	}
	v.good = good
	return v, nil
}

// readTail returns the bytes of f from off to its end (a torn tail, at
// most one line).
func readTail(f *os.File, off int64) ([]byte, error) {
	var b bytes.Buffer
	_, err := io.Copy(&b, io.NewSectionReader(f, off, 1<<62))
	return b.Bytes(), err
}
