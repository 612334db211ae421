package scenarios

// This file gives scenarios MCP servers and slash commands: the runner
// serves the demo MCP server (package agent/tool/mcp/mcptest) over
// streamable HTTP on a loopback port for scenarios that declare
// mcp_servers, names them in session/new and session/load, and writes
// their base URL as $MCP_URL in recordings; the client notes each
// session's available_commands_update so a step can wait for it.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
)

// MCPURLPlaceholder stands for the base URL of the runner's MCP servers in
// recordings.
const MCPURLPlaceholder = "$MCP_URL"

// MCPServer is one MCP server of a scenario: the demo server (tools echo,
// add, fail, image, wait) under Name, or, with Broken, an endpoint that answers
// every request with HTTP 503.
type MCPServer struct {
	Name   string
	Broken bool
}

func (p parser) mcpServers(n *yaml.Node) ([]MCPServer, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "mcp_servers", "must be a list")
	}
	var out []MCPServer
	for i, item := range n.Content {
		where := fmt.Sprintf("mcp_servers[%d]", i)
		f, err := p.fields(item, where, "name", "broken")
		if err != nil {
			return nil, err
		}
		var s MCPServer
		v, ok := f["name"]
		if !ok {
			return nil, p.errf(item, where, "needs a name")
		}
		if s.Name, err = p.str(v, where+".name"); err != nil {
			return nil, err
		}
		if v, ok := f["broken"]; ok {
			if s.Broken, err = p.boolean(v, where+".broken"); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// startMCP serves the scenario's MCP servers, if it has any; the returned
// function stops them.
func (r *runner) startMCP() (func(), error) {
	if len(r.sc.MCPServers) == 0 {
		return func() {}, nil
	}
	hs, err := mcptest.StartHTTP()
	if err != nil {
		return nil, fmt.Errorf("start the MCP servers: %w", err)
	}
	r.mcp = hs
	return func() { _ = hs.Close() }, nil
}

// mcpServers is the mcpServers parameter of session/new and session/load.
func (r *runner) mcpServers() []any {
	out := []any{}
	for _, s := range r.sc.MCPServers {
		path := "/" + s.Name
		if s.Broken {
			path = "/broken/" + s.Name
		}
		out = append(out, map[string]any{"type": "http", "name": s.Name, "url": r.mcp.URL + path, "headers": []any{}})
	}
	return out
}

// commandsSeen records which sessions received available_commands_update.
type commandsSeen struct {
	mu      sync.Mutex
	seen    map[string]bool
	changed chan struct{}
}

func (c *commandsSeen) note(req *jsonrpc2.Request) {
	if req.Method != "session/update" || req.Params == nil {
		return
	}
	var p struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	}
	if json.Unmarshal(*req.Params, &p) != nil || p.Update.SessionUpdate != "available_commands_update" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[p.SessionID] = true
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// afterNewSession waits for what the agent sends right after the
// session/new response (available commands, MCP start-up notices), so the
// next client frame follows it on every run: an in-process agent is
// flushed; one in another process is awaited by its
// available_commands_update.
func (r *runner) afterNewSession(ctx context.Context, id string) error {
	if f, ok := r.inst.sys.(flusher); ok {
		return f.FlushUpdates(ctx)
	}
	if r.inst.sys.Store() == nil {
		return r.inst.client.awaitCommands(ctx, id)
	}
	return nil
}

// awaitCommands waits until session id received its command list.
func (c *client) awaitCommands(ctx context.Context, id string) error {
	for {
		c.commands.mu.Lock()
		if c.commands.seen[id] {
			c.commands.mu.Unlock()
			return nil
		}
		if c.commands.changed == nil {
			c.commands.changed = make(chan struct{})
		}
		ch := c.commands.changed
		c.commands.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("no available_commands_update for session %s: %w", id, ctx.Err())
		}
	}
}
