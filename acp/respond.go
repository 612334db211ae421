package acp

// This file defines the after-response hooks: work queued for a session
// only once the client knows the session, that is, once the session/new
// response carrying its id is being written. Clients (Zed) drop updates of
// a session id they have not been told yet, so available_commands_update
// and MCP start-up notices of a new session must follow that response.

import (
	"bytes"
	"encoding/json"
	"sync"
)

// responseHooks maps a session id to the function to run when the
// response naming it ({"result":{"sessionId":...}}) is written.
type responseHooks struct {
	mu    sync.Mutex
	hooks map[string]func()
}

// add registers fn for the response naming session id.
func (h *responseHooks) add(id string, fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = make(map[string]func())
	}
	h.hooks[id] = fn
}

// remove drops the hook of session id (the session went away first).
func (h *responseHooks) remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.hooks, id)
}

// beforeWrite runs, under the SDK's write lock and before the bytes of an
// outbound message are written, the hook of the session a response names.
// The hook only queues updates: their sends wait for that same write lock,
// so they follow the response on the wire, and a client that read the
// response finds them queued (FlushUpdates waits for them).
func (h *responseHooks) beforeWrite(p []byte) {
	h.mu.Lock()
	empty := len(h.hooks) == 0
	h.mu.Unlock()
	if empty || !bytes.Contains(p, []byte(`"sessionId"`)) || !isResponse(p) {
		return
	}
	var m struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if json.Unmarshal(p, &m) != nil || m.Result.SessionID == "" {
		return
	}
	h.mu.Lock()
	fn := h.hooks[m.Result.SessionID]
	delete(h.hooks, m.Result.SessionID)
	h.mu.Unlock()
	if fn != nil {
		fn()
	}
}
