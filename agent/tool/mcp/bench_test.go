package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/mcp"
	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

// BenchmarkStartStop measures a session's MCP cost outside of calls:
// connecting one server (initialize and tool listing) and stopping it.
func BenchmarkStartStop(b *testing.B) {
	hs, err := mcptest.StartHTTP()
	if err != nil {
		b.Fatal(err)
	}
	defer hs.Close()
	for _, tt := range []struct {
		name string
		cfg  func(b *testing.B) mcp.ServerConfig
	}{
		{"http", func(*testing.B) mcp.ServerConfig {
			return mcp.ServerConfig{Name: "demo", Transport: mcp.TransportHTTP, URL: hs.URL + "/demo"}
		}},
		{"stdio", func(b *testing.B) mcp.ServerConfig { return self(b, "stdio") }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			cfg := tt.cfg(b)
			for b.Loop() {
				set, failures := mcp.Start(context.Background(), []mcp.ServerConfig{cfg}, mcp.Options{Permissions: workspace.Static{Cwd: b.TempDir(), Permissions: local.AllowAll{}}})
				if len(failures) > 0 {
					b.Fatal(failures)
				}
				if err := set.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCall measures one tool call through the registry to a running
// server over streamable HTTP.
func BenchmarkCall(b *testing.B) {
	hs, err := mcptest.StartHTTP()
	if err != nil {
		b.Fatal(err)
	}
	defer hs.Close()
	set, failures := mcp.Start(context.Background(), []mcp.ServerConfig{{Name: "demo", Transport: mcp.TransportHTTP, URL: hs.URL + "/demo"}}, mcp.Options{Permissions: workspace.Static{Cwd: b.TempDir(), Permissions: local.AllowAll{}}})
	if len(failures) > 0 {
		b.Fatal(failures)
	}
	defer set.Close()
	reg, err := tool.NewRegistry(set.Tools()...)
	if err != nil {
		b.Fatal(err)
	}
	inv := tool.Invocation{Caller: workspacetest.Caller("s1"), CallID: "c", Name: "mcp__demo__add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}
	for b.Loop() {
		if res := reg.Execute(context.Background(), inv); res.IsError {
			b.Fatal(res)
		}
	}
}
