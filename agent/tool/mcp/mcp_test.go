package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/mcp"
	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

// modeEnv makes the test binary act as an MCP server process: "stdio" is
// the demo server, "hang" never answers (it waits for stdin to close).
const modeEnv = "ACP_AGENT_MCPTEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "stdio":
		if err := mcptest.ServeStdio(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "hang":
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func self(t testing.TB, mode string) mcp.ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Name: "demo", Transport: mcp.TransportStdio, Command: exe, Env: []string{modeEnv + "=" + mode}, Dir: t.TempDir()}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct{ server, tool, want string }{
		{"demo", "echo", "mcp__demo__echo"},
		{"my server", "read.file", "mcp__my_server__read_file"},
		{"ünï", "a/b", "mcp____n____a_b"},
		{"", "t", "mcp_____t"},
	}
	for _, tt := range tests {
		if got := mcp.ToolName(tt.server, tt.tool); got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
	a, b := mcp.ToolName("s", long+"1"), mcp.ToolName("s", long+"2")
	if len(a) != 64 || len(b) != 64 || a == b {
		t.Errorf("long names: %q (%d) and %q (%d), want distinct 64-byte names", a, len(a), b, len(b))
	}
}

func call(t *testing.T, ctx context.Context, tools []tool.Tool, name, args string) tool.Result {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Execute(ctx, tool.Invocation{CallID: "c1", Name: name, Arguments: json.RawMessage(args), Caller: workspacetest.Caller("s1")})
}

// allowAll is Options whose gate allows every call.
func allowAll(t *testing.T) mcp.Options {
	return mcp.Options{Permissions: workspace.Static{Cwd: t.TempDir(), Permissions: local.AllowAll{}}}
}

func TestServers(t *testing.T) {
	hs, err := mcptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	tests := []struct {
		name string
		cfg  func(t *testing.T) mcp.ServerConfig
	}{
		{"stdio", func(t *testing.T) mcp.ServerConfig { return self(t, "stdio") }},
		{"http", func(t *testing.T) mcp.ServerConfig {
			return mcp.ServerConfig{Name: "demo", Transport: mcp.TransportHTTP, URL: hs.URL + "/demo", Headers: map[string]string{"X-Test": "1"}}
		}},
		{"sse", func(t *testing.T) mcp.ServerConfig {
			srv := mcptest.NewServer()
			sse := httptest.NewServer(mcpsdk.NewSSEHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil))
			t.Cleanup(sse.Close)
			return mcp.ServerConfig{Name: "demo", Transport: mcp.TransportSSE, URL: sse.URL}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			set, failures := mcp.Start(ctx, []mcp.ServerConfig{tt.cfg(t)}, allowAll(t))
			defer set.Close()
			if len(failures) > 0 {
				t.Fatalf("failures: %v", failures)
			}
			var names []string
			kinds := map[string]string{}
			for _, tl := range set.Tools() {
				names = append(names, tl.Spec().Name)
				kinds[tl.Spec().Name] = tl.(tool.Kind).Kind()
			}
			if got, want := strings.Join(names, ","), "mcp__demo__add,mcp__demo__echo,mcp__demo__fail,mcp__demo__image,mcp__demo__wait"; got != want {
				t.Fatalf("tools = %s, want %s", got, want)
			}
			if kinds["mcp__demo__echo"] != "read" || kinds["mcp__demo__add"] != "other" {
				t.Errorf("kinds = %v, want echo read and add other", kinds)
			}
			tools := set.Tools()
			res := call(t, ctx, tools, "mcp__demo__echo", `{"text":"hi"}`)
			if res.IsError || session.JoinText(res.Content, "") != "echo: hi" {
				t.Errorf("echo = %+v", res)
			}
			res = call(t, ctx, tools, "mcp__demo__add", `{"a":2,"b":3}`)
			raw, _ := json.Marshal(res.Raw)
			if res.IsError || session.JoinText(res.Content, "") != "5" || string(raw) != `{"sum":5}` {
				t.Errorf("add = %+v raw %s", res, raw)
			}
			res = call(t, ctx, tools, "mcp__demo__fail", `{}`)
			if !res.IsError || res.Error == nil || res.Error.Code != mcp.CodeToolError || session.JoinText(res.Content, "") != "the tool failed on purpose" {
				t.Errorf("fail = %+v", res)
			}
			res = call(t, ctx, tools, "mcp__demo__image", `{}`)
			if got := session.JoinText(res.Content, "|"); got != "[image image/png, 67 bytes]|a single pixel" {
				t.Errorf("image = %q", got)
			}
			if err := set.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			res = call(t, ctx, tools, "mcp__demo__echo", `{"text":"late"}`)
			if !res.IsError || res.Error.Code != mcp.CodeCallFailed {
				t.Errorf("call after Close = %+v, want %s", res, mcp.CodeCallFailed)
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	hs, err := mcptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	ctx := ctxFor(t)
	hang := self(t, "hang")
	hang.Name = "hang"
	configs := []mcp.ServerConfig{
		{Name: "nocmd", Transport: mcp.TransportStdio, Command: "/nonexistent/mcp-server"},
		{Name: "down", Transport: mcp.TransportHTTP, URL: hs.URL + "/broken/x"},
		hang,
		{Name: "good", Transport: mcp.TransportHTTP, URL: hs.URL + "/good"},
		{Name: "good", Transport: mcp.TransportHTTP, URL: hs.URL + "/good"},
		{Name: "bad", Transport: "carrier-pigeon"},
	}
	start := time.Now()
	set, failures := mcp.Start(ctx, configs, mcp.Options{StartTimeout: 500 * time.Millisecond, StopGrace: 100 * time.Millisecond, Permissions: allowAll(t).Permissions})
	defer set.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Start took %v", d)
	}
	got := map[string]string{}
	for _, f := range failures {
		got[f.Server] += f.Err.Error()
	}
	for name, want := range map[string]string{
		"nocmd": "no such file",
		"down":  "Service Unavailable",
		"hang":  "no answer within 500ms",
		"good":  "same name",
		"bad":   "unsupported transport",
	} {
		if !strings.Contains(got[name], want) {
			t.Errorf("failure of %s = %q, want it to mention %q", name, got[name], want)
		}
	}
	if s := strings.Join(set.Servers(), ","); s != "good" {
		t.Errorf("started servers = %q, want good", s)
	}
}
