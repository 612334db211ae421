package persistence

// This file defines the read-back of a held session's log
// (session.Reader): a live session keeps only a recent tail of its events
// in memory and reads older ones from its file. A sparse index of line
// offsets (one every readIndexStride events), built lazily by scanning for
// newlines, lets a read start near the first event asked for instead of
// at the top of a large file.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/acp-agent/acp-agent/agent/session"
)

// readIndexStride is the number of events between two indexed offsets.
const readIndexStride = 64

// readArenaChunk is the size of the chunks read-back payloads are copied
// into.
const readArenaChunk = 256 << 10

var _ session.Reader = (*Store)(nil)

// readIndex holds the offsets of the lines of seqs 0, stride, 2*stride, …
// of a held file, up to scanned bytes.
type readIndex struct {
	offsets []int64 // offsets[k] is the offset of the line of seq k*stride
	scanned int64   // bytes of the file scanned for line ends
	seq     int64   // events whose lines end within scanned
}

// Readable implements session.Reader: the events of session id written to
// its file (0 for a session this Store does not hold).
func (s *Store) Readable(id string) int64 {
	h, err := s.held(id)
	if err != nil || h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil || h.closed {
		return 0
	}
	return h.wroteSeq
}

// ReadEvents implements session.Reader: the events of session id with
// from <= seq < to, decoded from the written part of its file. Only a held
// session is read back; its written lines are immutable, so the read runs
// beside appends and flushes.
func (s *Store) ReadEvents(id string, from, to int64) ([]session.Event, error) {
	h, err := s.held(id)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("persistence: read back %s: the session is not held", id)
	}
	h.mu.Lock()
	written, wrote, ferr := h.written, h.wroteSeq, h.err
	h.mu.Unlock()
	if ferr != nil {
		return nil, ferr
	}
	if from < 0 || to > wrote || from > to {
		return nil, fmt.Errorf("persistence: read back %s: events %d..%d are not all written (%d are)", id, from, to-1, wrote)
	}
	if from == to {
		return []session.Event{}, nil
	}
	s.hit(FaultReadBack)
	if s.faultErr != nil {
		if err := s.faultErr(FaultReadBack); err != nil {
			return nil, fmt.Errorf("persistence: read back %s: %w", h.path, err)
		}
	}
	h.rmu.Lock()
	off, at, err := h.index.seek(h.f, from, written)
	h.rmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("persistence: read back %s: %w", h.path, err)
	}
	lr := &lineReader{r: bufio.NewReaderSize(io.NewSectionReader(h.f, off, written-off), 64<<10), off: off}
	out := make([]session.Event, 0, to-from)
	var arena []byte // the payloads, copied out of the reused line buffer
	for seq := at; seq < to; seq++ {
		line, terminated, loff, err := lr.next()
		if err == nil && !terminated {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, fmt.Errorf("persistence: read back %s at offset %d: %w", h.path, loff, err)
		}
		if seq < from {
			continue
		}
		ev, err := decodeEnvelope(line)
		// The line buffer is reused: the payloads are copied into chunks
		// of their own, which the events of one read share.
		if n := len(ev.Data); n > 0 {
			if cap(arena)-len(arena) < n {
				arena = make([]byte, 0, max(n, readArenaChunk))
			}
			start := len(arena)
			arena = append(arena, ev.Data...)
			ev.Data = arena[start:len(arena):len(arena)]
		}
		if err == nil && ev.Seq != seq {
			err = fmt.Errorf("line holds seq %d, want %d", ev.Seq, seq)
		}
		if err != nil {
			return nil, &CorruptError{ID: id, Path: h.path, Line: int(seq) + 2, Offset: loff, Err: err}
		}
		out = append(out, ev)
	}
	return out, nil
}

// seek returns the offset of an indexed line at or before seq and that
// line's seq, extending the index over the file's first written bytes as
// far as needed. The caller holds the handle's rmu.
func (x *readIndex) seek(f *os.File, seq, written int64) (off, at int64, err error) {
	if len(x.offsets) == 0 {
		hdr, err := headerEnd(f, written)
		if err != nil {
			return 0, 0, err
		}
		x.offsets, x.scanned = []int64{hdr}, hdr
	}
	k := seq / readIndexStride
	if k >= int64(len(x.offsets)) {
		if err := x.extend(f, k, written); err != nil {
			return 0, 0, err
		}
		k = min(k, int64(len(x.offsets))-1)
	}
	return x.offsets[k], k * readIndexStride, nil
}

// extend scans line ends from x.scanned until the line of seq
// k*readIndexStride is indexed or written is reached.
func (x *readIndex) extend(f *os.File, k, written int64) error {
	buf := make([]byte, 256<<10)
	for int64(len(x.offsets)) <= k && x.scanned < written {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), written-x.scanned)], x.scanned)
		if n == 0 && err != nil {
			return err
		}
		chunk := buf[:n]
		for i := 0; ; {
			j := bytes.IndexByte(chunk[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			x.seq++
			if x.seq%readIndexStride == 0 {
				x.offsets = append(x.offsets, x.scanned+int64(i))
			}
		}
		x.scanned += int64(n)
	}
	return nil
}

// headerEnd returns the offset just past the header line.
func headerEnd(f *os.File, written int64) (int64, error) {
	buf := make([]byte, 4096)
	for off := int64(0); off < written; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), written-off)], off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		if n == 0 && err != nil {
			return 0, err
		}
		off += int64(n)
	}
	return 0, errors.New("no header line")
}
