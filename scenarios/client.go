package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// client is the ACP client side of one connection, written on jsonrpc2
// (independent of the SDK the agent uses). Its handler runs on the read
// loop: it answers synchronously and never calls the agent.
type client struct {
	conn *jsonrpc2.Conn
	ws   *clientWorkspace

	mu      sync.Mutex
	pending map[string][]*pendingPrompt // by session id, in send order
	prompts int                         // prompts sent (their ids)

	commands commandsSeen // mcp.go
}

type pendingPrompt struct {
	step   Step
	id     string // the request's id (a string of ours: cancel_request names it)
	waiter jsonrpc2.Waiter
}

// stream glues the two pipe ends the client uses into one ReadWriteCloser.
type stream struct {
	io.Reader
	io.Writer
	closeFn func() error
}

func (s stream) Close() error { return s.closeFn() }

// promptTracker learns when a prompt request is sent and when its response
// arrives (the watcher: a session with an unanswered prompt is not idle).
type promptTracker interface {
	promptSent(sessionID string)
	promptAnswered(sessionID string)
}

func newClient(ctx context.Context, rwc io.ReadWriteCloser, track promptTracker, ws *clientWorkspace) *client {
	c := &client{pending: map[string][]*pendingPrompt{}, ws: ws}
	promptSession := func(req *jsonrpc2.Request) (string, bool) {
		if req == nil || req.Method != "session/prompt" || req.Params == nil {
			return "", false
		}
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(*req.Params, &p) != nil {
			return "", false
		}
		return p.SessionID, true
	}
	c.conn = jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(rwc), jsonrpc2.HandlerWithError(c.handle),
		jsonrpc2.OnSend(func(req *jsonrpc2.Request, _ *jsonrpc2.Response) {
			if id, ok := promptSession(req); ok {
				track.promptSent(id)
			}
		}),
		jsonrpc2.OnRecv(func(req *jsonrpc2.Request, resp *jsonrpc2.Response) {
			if resp == nil {
				return
			}
			if id, ok := promptSession(req); ok {
				track.promptAnswered(id)
			}
		}))
	return c
}

// handle answers agent-to-client requests. Permission requests get the
// answers the scenario scripted ("cancelled" when none is left); fs and
// terminal requests are served when the scenario's client advertises them
// and get method-not-found otherwise (workspace.go). Notifications need
// no answer: the wire recorder already keeps them.
func (c *client) handle(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Notif {
		c.commands.note(req)
		return nil, nil
	}
	if res, err, ok := c.ws.handle(ctx, req); ok {
		return res, err
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

// call sends a request and waits for its response.
func (c *client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.conn.Call(ctx, method, params, &out); err != nil {
		return nil, rpcError(method, err)
	}
	return out, nil
}

func rpcError(method string, err error) error {
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		return &promptError{method: method, code: re.Code, msg: re.Message}
	}
	return fmt.Errorf("%s: %w", method, err)
}

// promptError is a JSON-RPC error the agent answered a request with.
type promptError struct {
	method string
	code   int64
	msg    string
}

func (e *promptError) Error() string {
	return fmt.Sprintf("%s answered error %d: %s", e.method, e.code, e.msg)
}

// startPrompt sends session/prompt without waiting for the response.
func (c *client) startPrompt(ctx context.Context, st Step, sessionID string) error {
	params := map[string]any{
		"sessionId": sessionID,
		"prompt":    []any{map[string]any{"type": "text", "text": st.Text}},
	}
	c.mu.Lock()
	c.prompts++
	id := fmt.Sprintf("prompt-%d", c.prompts)
	c.mu.Unlock()
	w, err := c.conn.DispatchCall(ctx, "session/prompt", params, jsonrpc2.PickID(jsonrpc2.ID{Str: id, IsString: true}))
	if err != nil {
		return rpcError("session/prompt", err)
	}
	c.mu.Lock()
	c.pending[sessionID] = append(c.pending[sessionID], &pendingPrompt{step: st, id: id, waiter: w})
	c.mu.Unlock()
	return nil
}

// awaitPrompts waits for every outstanding prompt of sessionID, in send
// order, and returns their stop reasons.
func (c *client) awaitPrompts(ctx context.Context, sessionID string) ([]string, error) {
	c.mu.Lock()
	ps := c.pending[sessionID]
	delete(c.pending, sessionID)
	c.mu.Unlock()
	var reasons []string
	for _, p := range ps {
		var res struct {
			StopReason string `json:"stopReason"`
		}
		if err := p.waiter.Wait(ctx, &res); err != nil {
			var re *jsonrpc2.Error
			if errors.As(err, &re) && re.Code == codeRequestCancelled {
				// Ended by $/cancel_request (cancel_request step).
				reasons = append(reasons, fmt.Sprintf("error %d (%s)", re.Code, re.Message))
				continue
			}
			return reasons, rpcError("session/prompt", err)
		}
		reasons = append(reasons, res.StopReason)
	}
	return reasons, nil
}

// outstanding returns the session ids that still have unanswered prompts.
func (c *client) outstanding() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, ps := range c.pending {
		if len(ps) > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *client) notify(ctx context.Context, method string, params any) error {
	if err := c.conn.Notify(ctx, method, params); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}
