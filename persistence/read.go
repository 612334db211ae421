package persistence

// This file defines the JSONL record reader: it splits a session file into
// its header and events and tells a torn tail apart from corruption.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/acp-agent/acp-agent/agent/session"
)

// MaxHeaderLine bounds the header line (newline included). A header is a few
// hundred bytes; the bound keeps List's per-file read small and fixed.
const MaxHeaderLine = 64 << 10

// logView is a decoded session file.
type logView struct {
	header session.Header
	events []session.Event
	good   int64 // bytes of the valid prefix: offset just past its last line
	torn   bool  // bytes after good were ignored as a torn final line
}

// decodeLog parses a whole session file. Only the final line may be torn
// (unterminated, or terminated but not parsable as an event envelope); any
// other defect is a *CorruptError naming the line. Each line is validated
// and decoded in one pass (decodeEnvelope); event payloads alias data.
func decodeLog(id, path string, data []byte) (logView, error) {
	corrupt := func(line int, off int, err error) error {
		return &CorruptError{ID: id, Path: path, Line: line, Offset: int64(off), Err: err}
	}
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || nl+1 > MaxHeaderLine {
		if len(data) == 0 {
			return logView{}, corrupt(1, 0, errors.New("empty file: no header line"))
		}
		return logView{}, corrupt(1, 0, fmt.Errorf("no complete header line within %d bytes", MaxHeaderLine))
	}
	h, err := session.ParseHeaderLine(data[:nl], id)
	if err != nil {
		return logView{}, corrupt(1, 0, err)
	}
	off := nl + 1
	// One event per remaining line: a SIMD count saves the slice regrowth.
	v := logView{header: h}
	if n := bytes.Count(data[off:], []byte{'\n'}); n > 0 {
		v.events = make([]session.Event, 0, n)
	}
	for line := 2; off < len(data); line++ {
		rest := data[off:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			// Unterminated final line: a write cut short. Even if the bytes
			// happen to parse, the record never completed.
			v.torn = true
			break
		}
		final := off+i+1 == len(data)
		ev, err := decodeEnvelope(rest[:i])
		if err != nil {
			if final {
				v.torn = true
				break
			}
			return logView{}, corrupt(line, off, err)
		}
		if err := session.ValidateEvent(ev, int64(len(v.events))); err != nil {
			return logView{}, corrupt(line, off, err)
		}
		v.events = append(v.events, ev)
		off += i + 1
	}
	v.good = int64(off)
	if len(v.events) == 0 {
		v.events = nil // as the streaming reader leaves it
	}
	return v, nil
}

// readFile reads the first n bytes of f (its whole size when n < 0).
func readFile(f *os.File, n int64) ([]byte, error) {
	if n < 0 {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		n = st.Size()
	}
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	// A file shrunk since the stat (only a repairing writer does that) just
	// yields a shorter view.
	return buf[:m], nil
}

// encodeEvents appends the JSONL lines of events to buf. HTML escaping is
// off so payload bytes round-trip as written.
func encodeEvents(buf *bytes.Buffer, events []session.Event) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	for _, ev := range events {
		if err := enc.Encode(ev); err != nil {
			return fmt.Errorf("persistence: encode event %d (%s): %w", ev.Seq, ev.Type, err)
		}
	}
	return nil
}
