package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/acp-agent/acp-agent/agent/transcript"
)

// Directions of a recorded frame.
const (
	fromClient = 0
	fromAgent  = 1
)

var dirKey = [2]string{"client", "agent"}

// wireRecorder keeps the JSON-RPC frames of a run in the order they crossed
// the pipes. It taps the raw bytes (not the decoded messages): the agent's
// write to an io.Pipe returns only after the bytes were read, so a frame is
// recorded before the agent can take its next step, and every line the
// agent writes is checked to be exactly one JSON object.
//
// Ids are renumbered per direction in first-seen order (1, 2, …): a
// request's id through the sender's table, a response's id through the
// table of the direction that sent the request. Tables are reset on
// restart (a new connection reuses raw ids); the counters are not.
type wireRecorder struct {
	mu      sync.Mutex
	lines   [][]byte
	partial [2]bytes.Buffer
	ids     [2]map[string]int
	next    [2]int
	invalid []string
}

func newWireRecorder() *wireRecorder {
	r := &wireRecorder{}
	r.resetIDs()
	return r
}

func (r *wireRecorder) resetIDs() {
	r.ids = [2]map[string]int{{}, {}}
}

// restart marks a process boundary in the transcript.
func (r *wireRecorder) restart() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushPartialLocked()
	r.resetIDs()
	r.lines = append(r.lines, []byte(`{"scenario":"restart"}`))
}

// tap returns a writer that records bytes sent by dir.
func (r *wireRecorder) tap(dir int) io.Writer {
	return tapWriter{r, dir}
}

type tapWriter struct {
	r   *wireRecorder
	dir int
}

func (t tapWriter) Write(p []byte) (int, error) {
	t.r.write(t.dir, p)
	return len(p), nil
}

func (r *wireRecorder) write(dir int, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	buf := &r.partial[dir]
	buf.Write(p)
	for {
		i := bytes.IndexByte(buf.Bytes(), '\n')
		if i < 0 {
			return
		}
		line := append([]byte(nil), buf.Bytes()[:i]...)
		buf.Next(i + 1)
		r.frameLocked(dir, line)
	}
}

// finish reports unterminated output left in either direction.
func (r *wireRecorder) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushPartialLocked()
}

func (r *wireRecorder) flushPartialLocked() {
	for dir := range r.partial {
		if r.partial[dir].Len() > 0 {
			r.invalid = append(r.invalid, fmt.Sprintf("%s wrote an unterminated line: %q", dirKey[dir], r.partial[dir].String()))
			r.partial[dir].Reset()
		}
	}
}

func (r *wireRecorder) frameLocked(dir int, line []byte) {
	var frame map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&frame); err != nil || dec.More() || frame == nil {
		r.invalid = append(r.invalid, fmt.Sprintf("%s wrote a line that is not one JSON object: %q", dirKey[dir], line))
		return
	}
	if id, ok := frame["id"]; ok && id != nil {
		key := string(transcript.Canonical(id))
		if _, isRequest := frame["method"]; isRequest {
			n, seen := r.ids[dir][key]
			if !seen {
				r.next[dir]++
				n = r.next[dir]
				r.ids[dir][key] = n
			}
			frame["id"] = n
		} else if n, ok := r.ids[1-dir][key]; ok {
			frame["id"] = n
		}
	}
	if frame["method"] == "$/cancel_request" {
		// The id it names, through the sender's table.
		if params, ok := frame["params"].(map[string]any); ok && params["requestId"] != nil {
			if n, ok := r.ids[dir][string(transcript.Canonical(params["requestId"]))]; ok {
				params["requestId"] = n
			}
		}
	}
	r.lines = append(r.lines, transcript.Canonical(map[string]any{dirKey[dir]: frame}))
}

// transcript returns the recorded frames, one canonical JSON object per
// line, and the purity violations seen.
func (r *wireRecorder) transcript() ([]byte, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	for _, l := range r.lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes(), append([]string(nil), r.invalid...)
}
