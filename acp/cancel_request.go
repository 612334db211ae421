package acp

// This file defines what $/cancel_request does beyond what the SDK does.
// The SDK handles the notification in its read loop: it cancels the named
// request's context (cause context.Canceled), and a handler that returns
// that error is answered -32800 "Request cancelled", the code the schema
// names. session/list and session/load return it (their storage reads and
// the replay's flush end with the context; a load cancelled before its
// answer releases what it bound). A session/prompt ends its turn as
// session/cancel would, but its answer is the -32800 error rather than
// stopReason "cancelled": the wire counter (wire.go) saw the notification
// name the prompt's id before the SDK acted on it.

import (
	"bytes"
	"encoding/json"

	acpsdk "github.com/coder/acp-go-sdk"
)

// methodCancelRequest is the protocol-level cancellation notification.
const methodCancelRequest = "$/cancel_request"

// idKey is the form request ids are compared in: the id's JSON text,
// compacted (a number and a string with the same digits differ).
func idKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func (c *wireCounter) promptIDRead(id, sessionID string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.promptIDs == nil {
		c.promptIDs = map[string]string{}
	}
	c.promptIDs[id] = sessionID
}

func (c *wireCounter) cancelRequestRead(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sid, ok := c.promptIDs[id]
	if !ok {
		return
	}
	if c.requestCancelled == nil {
		c.requestCancelled = map[string]bool{}
	}
	c.requestCancelled[sid] = true
}

// takeRequestCancel reports, once, whether a $/cancel_request named the
// prompt of session id in flight.
func (c *wireCounter) takeRequestCancel(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := c.requestCancelled[id]
	delete(c.requestCancelled, id)
	return ok
}

// errRequestCancelled is the answer of a request a $/cancel_request ended.
func errRequestCancelled(method string) error {
	return acpsdk.NewRequestCancelled(map[string]any{"method": method})
}
