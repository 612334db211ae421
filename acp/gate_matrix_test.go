package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
)

// gateMCPServer is an in-test MCP server (official Go SDK) with one tool
// per annotation class: look (read-only), wipe (read-only but also
// destructive: not read-only for us) and plain (no annotations).
func gateMCPServer(t *testing.T) string {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "gate", Version: "1.0.0"}, nil)
	ok := func(context.Context, *mcpsdk.CallToolRequest, struct{}) (*mcpsdk.CallToolResult, any, error) {
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "ran"}}}, nil, nil
	}
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "look", Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}}, ok)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "wipe", Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(true)}}, ok)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "plain"}, ok)
	hs := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s },
		&mcpsdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// gateClass is one tool class of the matrix: its call and the rule
// pattern that names it.
type gateClass struct {
	name, tool, args, rule string
	readOnly, edit         bool
}

var gateClasses = []gateClass{
	{name: "read-only workspace tool", tool: "read", args: `{"path":"a.txt"}`, rule: "read(a.txt)", readOnly: true},
	{name: "edit", tool: "write", args: `{"path":"a.txt","content":"new"}`, rule: "edit(a.txt)", edit: true},
	{name: "bash", tool: "bash", args: `{"command":"echo hi","description":"Say hi"}`, rule: "bash(echo hi)"},
	{name: "MCP read-only", tool: "mcp__gate__look", args: `{}`, rule: "mcp__gate__look", readOnly: true},
	{name: "MCP destructive", tool: "mcp__gate__wipe", args: `{}`, rule: "mcp__gate__wipe"},
	{name: "MCP without annotations", tool: "mcp__gate__plain", args: `{}`, rule: "mcp__gate__*"},
}

// Outcomes of a call in the matrix.
const (
	outRun    = "runs"
	outAsk    = "asks"
	outForbid = workspace.CodeModeForbids
	outDeny   = workspace.CodeRuleDenies
)

// wantGate is the contract: deny rules refuse in every mode; plan refuses
// everything with effects; bypass runs everything else; an ask rule asks;
// an allow rule runs; read-only tools run; accept-edits runs edits; the
// rest asks.
func wantGate(mode, rule string, c gateClass) string {
	switch {
	case rule == "deny":
		return outDeny
	case mode == acp.ModePlan && !c.readOnly:
		return outForbid
	case mode == acp.ModeBypass:
		return outRun
	case rule == "ask":
		return outAsk
	case rule == "allow", c.readOnly, mode == acp.ModeAcceptEdits && c.edit:
		return outRun
	}
	return outAsk
}

// TestGateMatrix: mode × tool class × rule, through the real connection,
// the real workspace tools and an MCP server. Allow rules come from the
// user-level file (scoped to the project), ask and deny rules from the
// project file.
func TestGateMatrix(t *testing.T) {
	url := gateMCPServer(t)
	var script strings.Builder
	script.WriteString("model:\n  main:\n    - tool_calls:\n")
	for i, c := range gateClasses {
		fmt.Fprintf(&script, "        - {id: call-%d, name: %s, arguments: '%s'}\n", i, c.tool, c.args)
	}
	script.WriteString("    - text: done\n")
	for _, mode := range []string{acp.ModeDefault, acp.ModeAcceptEdits, acp.ModePlan, acp.ModeBypass} {
		for _, rule := range []string{"none", "allow", "ask", "deny"} {
			t.Run(mode+"/"+rule, func(t *testing.T) {
				ctx := ctxFor(t)
				cwd := tempCwd(t)
				if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				userFile := filepath.Join(t.TempDir(), "settings.json")
				var rules []string
				for _, c := range gateClasses {
					rules = append(rules, c.rule)
				}
				list, _ := json.Marshal(rules)
				switch rule {
				case "allow":
					writeFile(t, userFile, fmt.Sprintf(`{"projects": {%q: {"allow": %s}}}`, cwd, list))
				case "ask", "deny":
					writeFile(t, filepath.Join(cwd, ".acp-agent", "settings.json"), fmt.Sprintf(`{"permissions": {%q: %s}}`, rule, list))
				}
				answers := make([]string, len(gateClasses))
				for i := range answers {
					answers[i] = acp.OptionAllowOnce
				}
				c := newWSClient(false, false, answers...)
				e := startWS(t, loadScript(t, script.String()), c, func(cfg *app.Config, _ workspace.Resolver) {
					cfg.SettingsFile = userFile
				})
				r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{
					{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: "gate", Url: url, Headers: []acpsdk.HttpHeader{}}}}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: acpsdk.SessionModeId(mode)}); err != nil {
					t.Fatal(err)
				}
				id := string(r.SessionId)
				if _, err := e.prompt(ctx, id, "go"); err != nil {
					t.Fatal(err)
				}
				asked := map[string]bool{}
				for _, q := range c.requests() {
					asked[string(q.ToolCall.ToolCallId)] = true
				}
				res := toolResults(e.rec.snapshot(id))
				for i, cl := range gateClasses {
					call := fmt.Sprintf("call-%d", i)
					want := wantGate(mode, rule, cl)
					u := res[call]
					if u == nil {
						t.Errorf("%s: no result", cl.name)
						continue
					}
					raw, _ := json.Marshal(u.RawOutput)
					var got string
					switch {
					case *u.Status == acpsdk.ToolCallStatusCompleted && asked[call]:
						got = outAsk
					case *u.Status == acpsdk.ToolCallStatusCompleted:
						got = outRun
					case strings.Contains(string(raw), outForbid) && !asked[call]:
						got = outForbid
					case strings.Contains(string(raw), outDeny) && !asked[call]:
						got = outDeny
					default:
						got = fmt.Sprintf("%s asked=%v %s", *u.Status, asked[call], raw)
					}
					if got != want {
						t.Errorf("%s: %s, want %s", cl.name, got, want)
					}
				}
			})
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
