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
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"
)

// maxLine mirrors the SDK's inbound line limit: a longer line ends the
// connection, so nothing after it is answered or counted.
const maxLine = 10 << 20

type wireCounter struct {
	// compaction records clientCapabilities.session.compaction from the
	// initialize request: the SDK's type has no field for it (context.go).
	compaction atomic.Bool
	// subagents records clientCapabilities.subagents (ACP v1 subagent
	// sessions): the SDK's type has no field for it either.
	subagents atomic.Bool
	// booleanConfig records clientCapabilities.session.configOptions
	// .boolean (boolean config options, config_boolean.go).
	booleanConfig atomic.Bool

	mu       sync.Mutex // guards the fields below
	received int64      // requests read
	answered int64      // responses written
	broken   bool       // counting gave up (oversized line); never wait
	changed  chan struct{}
	prompts  map[string]*promptOrder // by session id; see promptOrder
	// promptIDs maps the id of each session/prompt request read (its JSON
	// text) to its session; requestCancelled marks the sessions whose
	// prompt a $/cancel_request named, so Prompt answers -32800 rather
	// than stopReason "cancelled" (cancel_request.go).
	promptIDs        map[string]string
	requestCancelled map[string]bool
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
	r    io.Reader
	c    *wireCounter
	gate <-chan struct{} // the first Read waits for it to close
	// reject, when set, answers a line the SDK would drop silently (code
	// -32700 or -32600, see lineInfo.invalid).
	reject  func(code int)
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
				if len(cr.partial) >= maxLine {
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
			switch {
			case len(line) >= maxLine:
				// The SDK's scanner fails on this line (it needs room
				// for the newline too) and stops reading.
				broken = true
			default:
				li := scanLine(line)
				if li.request {
					reqs++
				}
				if li.invalid != 0 && cr.reject != nil {
					cr.reject(li.invalid)
				}
				if li.compaction {
					cr.c.compaction.Store(true)
				}
				if li.subagents {
					cr.c.subagents.Store(true)
				}
				if li.booleanConfig {
					cr.c.booleanConfig.Store(true)
				}
				// Recorded before Read returns, so before the SDK can
				// dispatch the line.
				switch {
				case li.prompt:
					cr.c.promptRead(li.sessionID)
					cr.c.promptIDRead(li.id, li.sessionID)
				case li.cancel:
					cr.c.cancelRead(li.sessionID)
				case li.cancelRequest != "":
					cr.c.cancelRequestRead(li.cancelRequest)
				}
			}
		}
		cr.partial, cr.skip = cr.partial[:0], false
		data = data[i+1:]
	}
	cr.c.add(reqs, 0, broken)
	return n, err
}

// lineInfo is what the counter needs to know about one inbound line.
type lineInfo struct {
	request   bool   // the SDK will answer it
	prompt    bool   // a session/prompt request the SDK hands to Prompt
	cancel    bool   // a session/cancel notification the SDK hands to Cancel
	sessionID string // of prompt or cancel
	// id is a prompt request's id (its JSON text); cancelRequest the
	// requestId of a $/cancel_request notification (the same form).
	id, cancelRequest string
	// invalid is the JSON-RPC error the line deserves because the SDK
	// drops it unanswered: -32700 (not JSON) or -32600 (JSON, but not a
	// message the SDK can decode). 0 otherwise, also for blank lines.
	invalid int
	// compaction: an initialize request whose clientCapabilities.session
	// announces compaction (compaction_update).
	compaction bool
	// subagents: an initialize request whose clientCapabilities.subagents
	// is an object (ACP v1 subagent sessions, subagent_wire.go).
	subagents bool
	// booleanConfig: an initialize request whose
	// clientCapabilities.session.configOptions.boolean is an object.
	booleanConfig bool
}

// scanLine classifies a line the way the SDK will: it decodes the line into
// the same envelope shape the SDK does (so a line the SDK skips, say with
// "jsonrpc": 2 or "error": 5, is not counted), a request has a non-null id
// and a method ("id": null decodes to a nil pointer, which the SDK handles
// as a notification and never answers), and prompt and cancel params are
// decoded and validated as the SDK does before calling the handler.
func scanLine(line []byte) lineInfo {
	var m struct {
		JSONRPC string               `json:"jsonrpc"`
		ID      *json.RawMessage     `json:"id,omitempty"`
		Method  string               `json:"method,omitempty"`
		Params  json.RawMessage      `json:"params,omitempty"`
		Result  json.RawMessage      `json:"result,omitempty"`
		Error   *acpsdk.RequestError `json:"error,omitempty"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		switch {
		case len(bytes.TrimSpace(line)) == 0:
			return lineInfo{}
		case !json.Valid(line):
			return lineInfo{invalid: codeParseError}
		}
		return lineInfo{invalid: codeInvalidRequest}
	}
	if m.Method == "" {
		return lineInfo{}
	}
	li := lineInfo{request: m.ID != nil}
	switch {
	case li.request && m.Method == acpsdk.AgentMethodSessionPrompt:
		var p acpsdk.PromptRequest
		if json.Unmarshal(m.Params, &p) == nil && p.Validate() == nil {
			li.prompt, li.sessionID = true, string(p.SessionId)
			li.id = idKey(*m.ID)
		}
	case !li.request && m.Method == methodCancelRequest:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
			li.cancelRequest = idKey(p.RequestID)
		}
	case li.request && (m.Method == acpsdk.AgentMethodInitialize || m.Method == aliasPrefix+acpsdk.AgentMethodInitialize):
		// (aliasReader, in front of this reader, renamed it: protocol2026.go)
		var p struct {
			ClientCapabilities struct {
				Session struct {
					Compaction    json.RawMessage `json:"compaction"`
					ConfigOptions struct {
						Boolean json.RawMessage `json:"boolean"`
					} `json:"configOptions"`
				} `json:"session"`
				Subagents json.RawMessage `json:"subagents"`
			} `json:"clientCapabilities"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			c := string(bytes.TrimSpace(p.ClientCapabilities.Session.Compaction))
			li.compaction = c != "" && c != "null" && c != "false"
			// ACP v1: an object (usually {}) opts in; omitted or null
			// does not.
			li.subagents = bytes.HasPrefix(bytes.TrimSpace(p.ClientCapabilities.Subagents), []byte("{"))
			li.booleanConfig = bytes.HasPrefix(bytes.TrimSpace(p.ClientCapabilities.Session.ConfigOptions.Boolean), []byte("{"))
		}
	case !li.request && m.Method == acpsdk.AgentMethodSessionCancel:
		var p acpsdk.CancelNotification
		if json.Unmarshal(m.Params, &p) == nil && p.Validate() == nil {
			li.cancel, li.sessionID = true, string(p.SessionId)
		}
	}
	return li
}

// promptOrder relates the session/prompt requests and session/cancel
// notifications of one session in the order they were read. The SDK runs
// each request on its own goroutine but notifications on another, so a
// cancel sent right after a prompt can be handled before that prompt's
// handler registered anything to cancel. Prompt handlers take tickets in
// the order they start (the read order, barring two prompts of one session
// racing, which is an error anyway); a prompt whose ticket is at most
// cancelUpTo was read before a cancel and starts cancelled.
type promptOrder struct {
	read       int64 // prompt requests read
	started    int64 // tickets handed out
	cancelUpTo int64 // read when the last cancel was read
	active     int   // handlers holding a ticket
}

func (c *wireCounter) promptRead(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prompts == nil {
		c.prompts = make(map[string]*promptOrder)
	}
	o := c.prompts[sessionID]
	if o == nil {
		o = &promptOrder{}
		c.prompts[sessionID] = o
	}
	o.read++
}

func (c *wireCounter) cancelRead(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// No entry: no prompt of this session is between read and done, so
	// the cancel handler sees every prompt it may cancel.
	if o := c.prompts[sessionID]; o != nil {
		o.cancelUpTo = o.read
	}
}

// promptStarted hands a starting Prompt handler its ticket; the handler
// calls promptDone when it returns.
func (c *wireCounter) promptStarted(sessionID string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.prompts[sessionID]
	if o == nil { // not read through the counter (direct calls)
		return 0
	}
	o.started++
	o.active++
	return o.started
}

// cancelledEarly reports whether a cancel of the session was read after
// the prompt holding ticket.
func (c *wireCounter) cancelledEarly(sessionID string, ticket int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.prompts[sessionID]
	return o != nil && ticket > 0 && ticket <= o.cancelUpTo
}

func (c *wireCounter) promptDone(sessionID string, ticket int64) {
	if ticket == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.prompts[sessionID]
	if o == nil {
		return
	}
	o.active--
	if o.active <= 0 && o.started >= o.read {
		delete(c.prompts, sessionID)
		for id, sid := range c.promptIDs {
			if sid == sessionID {
				delete(c.promptIDs, id)
			}
		}
		delete(c.requestCancelled, sessionID)
	}
}

// countingWriter passes the agent's messages through (the SDK writes each
// as one Write) and counts the responses among them.
type countingWriter struct {
	w io.Writer
	c *wireCounter
	// before, when set, sees each message before it is written; after
	// sees it once written.
	before, after func(p []byte)
	mu            sync.Mutex // one message at a time: the SDK's writes and the replay's raw lines (replay.go)
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	if cw.before != nil {
		cw.before(p)
	}
	cw.mu.Lock()
	n, err := cw.w.Write(p)
	cw.mu.Unlock()
	if isResponse(p) {
		cw.c.add(0, 1, false)
	}
	if cw.after != nil && err == nil {
		cw.after(p)
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

// JSON-RPC codes of lines the SDK cannot decode.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// rejectLine answers an undecodable line with a JSON-RPC error whose id is
// null (JSON-RPC 2.0 §5: the id could not be read). The SDK logs and
// drops such lines, so without this a client waits forever. The reply is
// not counted as a response: the line was never counted as a request.
func (cw *countingWriter) rejectLine(code int) {
	msg := "Parse error: the line is not valid JSON"
	if code == codeInvalidRequest {
		msg = "Invalid request: the line is not a JSON-RPC 2.0 message"
	}
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	if err != nil {
		return
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	_, _ = cw.w.Write(append(b, '\n'))
}
