package acp

// This file defines the wire counter: it counts the requests the SDK will
// answer (inbound lines with an id and a method) and the responses written,
// so that shutdown can wait until every request read before the client
// closed its end has been answered. The SDK gives no such signal itself:
// it writes a response after the handler returns, on the handler's
// goroutine.

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// maxLine mirrors the SDK's inbound line limit: a longer line ends the
// connection, so nothing after it is answered or counted.
const maxLine = 10 << 20

type wireCounter struct {
	mu       sync.Mutex // guards the fields below
	received int64      // requests read
	answered int64      // responses written
	broken   bool       // counting gave up (oversized line); never wait
	changed  chan struct{}
}

func newWireCounter() *wireCounter { return &wireCounter{changed: make(chan struct{})} }

func (c *wireCounter) add(received, answered int64, broken bool) {
	if received == 0 && answered == 0 && !broken {
		return
	}
	c.mu.Lock()
	c.received += received
	c.answered += answered
	c.broken = c.broken || broken
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// settled reports whether every counted request was answered, and returns
// a channel closed at the next change.
func (c *wireCounter) settled() (bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken || c.answered >= c.received, c.changed
}

// countingReader passes the client's bytes through and counts the requests
// among its complete lines.
type countingReader struct {
	r       io.Reader
	c       *wireCounter
	gate    <-chan struct{} // the first Read waits for it to close
	partial []byte
	skip    bool // inside an oversized line
}

func (cr *countingReader) Read(p []byte) (int, error) {
	if cr.gate != nil {
		<-cr.gate
		cr.gate = nil
	}
	n, err := cr.r.Read(p)
	data := p[:n]
	var reqs int64
	broken := false
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !cr.skip {
				cr.partial = append(cr.partial, data...)
				if len(cr.partial) > maxLine {
					cr.partial, cr.skip, broken = nil, true, true
				}
			}
			break
		}
		if !cr.skip {
			line := data[:i]
			if len(cr.partial) > 0 {
				line = append(cr.partial, line...)
			}
			if isRequestLine(line) {
				reqs++
			}
		}
		cr.partial, cr.skip = cr.partial[:0], false
		data = data[i+1:]
	}
	cr.c.add(reqs, 0, broken)
	return n, err
}

// isRequestLine reports whether the SDK will answer this line: a JSON
// object with an id and a method.
func isRequestLine(line []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	return len(m.ID) > 0 && m.Method != ""
}

// countingWriter passes the agent's messages through (the SDK writes each
// as one Write) and counts the responses among them.
type countingWriter struct {
	w io.Writer
	c *wireCounter
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	if isResponse(p) {
		cw.c.add(0, 1, false)
	}
	return n, err
}

// isResponse reports whether an outbound SDK message is a response: its
// "id" member is not followed by "method". The SDK marshals its envelope
// with a fixed key order (jsonrpc, id, method, ...), so reading the first
// few tokens suffices.
func isResponse(p []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(p))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	sawID := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		switch k {
		case "method":
			return false
		case "id":
			sawID = true
		case "result", "error":
			return sawID
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return sawID
}
