package acp

// This file defines requests to the client whose shape the SDK cannot
// express (elicitation/create needs sessionId and toolCallId, which the
// SDK's type lacks): the request line is written whole to the
// connection's writer, like the raw session/update lines (replay.go), with
// an id of our own that the SDK never uses (a string; it numbers its own),
// and aliasReader hands the response line to the waiting call instead of
// the SDK.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
)

// rawIDPrefix starts the ids of raw calls.
const rawIDPrefix = "acp-agent-call-"

// rawCalls are the raw requests waiting for their response.
type rawCalls struct {
	mu      sync.Mutex
	next    int64
	pending map[string]chan rawResponse
}

type rawResponse struct {
	Result json.RawMessage      `json:"result"`
	Error  *acpsdk.RequestError `json:"error"`
}

// errConnectionGone answers a raw call whose connection ended first.
var errConnectionGone = errors.New("acp: the client connection ended before it answered")

// callRaw sends method with params to the client and waits for its
// result, ctx's end (the client is then sent $/cancel_request) or the end
// of the connection.
func (s *Server) callRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	<-s.ready
	c := &s.raw
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[string]chan rawResponse{}
	}
	c.next++
	id := rawIDPrefix + strconv.FormatInt(c.next, 10)
	ch := make(chan rawResponse, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := s.out.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("send %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		s.notifyRaw(methodCancelRequest, map[string]any{"requestId": id})
		return nil, context.Cause(ctx)
	case <-s.conn.Done():
		return nil, errConnectionGone
	}
}

// notifyRaw sends a notification line, best effort.
func (s *Server) notifyRaw(method string, params any) {
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err == nil {
		_, err = s.out.Write(append(line, '\n'))
	}
	if err != nil {
		s.log.Debug("notification not sent", "method", method, "err", err)
	}
}

// deliver hands a response line to its waiting raw call and reports
// whether it did (the line then does not reach the SDK).
func (c *rawCalls) deliver(line []byte) bool {
	if !bytes.Contains(line, []byte(`"`+rawIDPrefix)) {
		return false
	}
	var m struct {
		ID     json.RawMessage      `json:"id"`
		Method string               `json:"method"`
		Result json.RawMessage      `json:"result"`
		Error  *acpsdk.RequestError `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "" {
		return false
	}
	var id string
	if json.Unmarshal(m.ID, &id) != nil || len(id) <= len(rawIDPrefix) || id[:len(rawIDPrefix)] != rawIDPrefix {
		return false
	}
	c.mu.Lock()
	ch := c.pending[id]
	c.mu.Unlock()
	if ch == nil {
		return false // late or unknown: the SDK drops what it did not ask
	}
	select {
	case ch <- rawResponse{Result: m.Result, Error: m.Error}:
	default: // answered twice: the first answer stands
	}
	return true
}
