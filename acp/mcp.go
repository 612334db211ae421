package acp

// This file connects the MCP servers a client names in session/new and
// session/load (package agent/tool/mcp does the MCP side): it translates
// acpsdk.McpServer entries, starts them for the session, builds the
// session's agent with their tools, and turns start failures into a
// notice the user sees. A server that fails never fails the session.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	mcptool "github.com/acp-agent/acp-agent/agent/tool/mcp"
)

// mcpCapabilities is what initialize advertises: stdio always, streamable
// HTTP and the older HTTP+SSE transport through the MCP SDK.
var mcpCapabilities = acpsdk.McpCapabilities{Http: true, Sse: true}

// mcpConfigs translates the client's server list. Entries of a transport
// we do not support (ACP-tunnelled MCP) come back as failures.
func mcpConfigs(servers []acpsdk.McpServer, cwd string) ([]mcptool.ServerConfig, []mcptool.Failure) {
	var cfgs []mcptool.ServerConfig
	var bad []mcptool.Failure
	for _, srv := range servers {
		switch {
		case srv.Stdio != nil:
			c := mcptool.ServerConfig{Name: srv.Stdio.Name, Transport: mcptool.TransportStdio,
				Command: srv.Stdio.Command, Args: srv.Stdio.Args, Dir: cwd}
			for _, e := range srv.Stdio.Env {
				c.Env = append(c.Env, e.Name+"="+e.Value)
			}
			cfgs = append(cfgs, c)
		case srv.Http != nil:
			cfgs = append(cfgs, mcptool.ServerConfig{Name: srv.Http.Name, Transport: mcptool.TransportHTTP,
				URL: srv.Http.Url, Headers: headerMap(srv.Http.Headers)})
		case srv.Sse != nil:
			cfgs = append(cfgs, mcptool.ServerConfig{Name: srv.Sse.Name, Transport: mcptool.TransportSSE,
				URL: srv.Sse.Url, Headers: headerMap(srv.Sse.Headers)})
		case srv.Acp != nil:
			bad = append(bad, mcptool.Failure{Server: srv.Acp.Name, Err: fmt.Errorf("MCP over ACP is not supported")})
		default:
			bad = append(bad, mcptool.Failure{Server: "(unnamed)", Err: fmt.Errorf("unknown MCP server transport")})
		}
	}
	return cfgs, bad
}

func headerMap(hs []acpsdk.HttpHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}

// NoticeMCPServerFailed is the _meta notice kind of the message saying an
// MCP server of session/new could not be started.
const NoticeMCPServerFailed = "mcp-server-failed"

// startMCP starts a session's MCP servers. It returns the running set (nil
// when none were asked for) and one notice per server that failed.
func (s *Server) startMCP(ctx context.Context, cwd string, servers []acpsdk.McpServer) (*mcptool.Set, []acpsdk.SessionUpdate) {
	if len(servers) == 0 {
		return nil, nil
	}
	cfgs, failures := mcpConfigs(servers, cwd)
	// A stdio server gets what a command gets (no provider key, no other
	// secret) plus what the editor passed for it.
	base := s.rootPolicies().FilteredEnv(cwd)
	for i := range cfgs {
		cfgs[i].BaseEnv = base
	}
	opts := s.opts.MCP
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = s.opts.Version
	}
	// Every MCP call passes the gate of the session that makes it.
	opts.Permissions = s
	set, more := mcptool.Start(ctx, cfgs, opts)
	failures = append(failures, more...)
	var notices []acpsdk.SessionUpdate
	for _, f := range failures {
		s.log.Warn("mcp server failed to start", "mcp_server", f.Server, "err", f.Err)
		u := acpsdk.UpdateAgentMessageText(fmt.Sprintf(
			"MCP server `%s` could not be started, so its tools are not available in this session: %v\n\n", f.Server, f.Err))
		// Marked, so a client without a person (exec) can say it on
		// stderr whenever it arrives.
		u.AgentMessageChunk.Meta = map[string]any{MetaNotice: map[string]any{"kind": NoticeMCPServerFailed, "server": f.Server}}
		notices = append(notices, u)
	}
	if names := set.Servers(); len(names) > 0 {
		s.log.Info("mcp servers started", "servers", strings.Join(names, ","), "tools", len(set.Tools()))
	}
	return set, notices
}

// newAgent builds the agent of a top-level session, with the tools of its
// MCP servers when it has any.
func (s *Server) newAgent(sess *session.Session, set *mcptool.Set) (*agent.Agent, error) {
	extra := slices.Concat(set.Tools(), s.sessionTools(sess))
	if len(extra) == 0 {
		return s.opts.NewAgent(sess)
	}
	if s.opts.NewAgentWithTools == nil {
		s.log.Warn("mcp tools not offered: the composition cannot add session tools", "session_id", sess.ID())
		return s.opts.NewAgent(sess)
	}
	return s.opts.NewAgentWithTools(sess, extra)
}

// toolLookup finds tools for the translator of a session: the agent's own
// registry first (it holds session tools such as MCP tools), then the
// shared lookup.
func (s *Server) toolLookup(ag *agent.Agent) ToolLookup {
	if ag == nil {
		return s.opts.Tools
	}
	return func(name string) (tool.Tool, bool) {
		if t, ok := ag.Tools().Get(name); ok {
			return t, true
		}
		if s.opts.Tools != nil {
			return s.opts.Tools(name)
		}
		return nil, false
	}
}
