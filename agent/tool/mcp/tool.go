package mcp

// This file defines the model-facing adapter of one remote tool: its name,
// spec, kind and title, and the mapping of a call's result.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Codes of MCP tool failures.
const (
	// CodeToolError: the server ran the tool and reported isError.
	CodeToolError = "MCP_TOOL_ERROR"
	// CodeCallFailed: the call did not complete (server gone, protocol
	// error).
	CodeCallFailed = "MCP_CALL_FAILED"
)

// NamePrefix starts every MCP tool's model-facing name.
const NamePrefix = "mcp__"

// maxToolName is the longest tool name model APIs accept.
const maxToolName = 64

// ToolName returns the model-facing name of tool on server:
// "mcp__<server>__<tool>", with every character model APIs reject replaced
// by "_" and, when longer than 64 bytes, shortened with a hash suffix so
// distinct tools keep distinct names.
func ToolName(server, tool string) string {
	name := NamePrefix + sanitize(server) + "__" + sanitize(tool)
	if len(name) <= maxToolName {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(server + "\x00" + tool))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	return name[:maxToolName-len(suffix)] + suffix
}

// sanitize keeps [A-Za-z0-9_-] and replaces everything else by "_".
func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// remoteTool is one server tool offered to the model.
type remoteTool struct {
	srv      *server
	remote   string // the server's name for it
	spec     model.ToolSpec
	title    string
	readOnly bool
}

var permissiveSchema = json.RawMessage(`{"type":"object"}`)

// newRemoteTool adapts rt. taken holds the names already given in this
// set; a name that sanitizing made collide gets a numeric suffix.
func newRemoteTool(srv *server, rt *mcpsdk.Tool, taken map[string]bool) *remoteTool {
	name := ToolName(srv.name, rt.Name)
	for i := 2; taken[name]; i++ {
		suffix := fmt.Sprintf("_%d", i)
		base := ToolName(srv.name, rt.Name)
		name = base[:min(len(base), maxToolName-len(suffix))] + suffix
	}
	taken[name] = true
	t := &remoteTool{srv: srv, remote: rt.Name, title: rt.Title}
	if a := rt.Annotations; a != nil {
		// Read-only only on the server's word, and never when it also
		// says the tool is destructive.
		t.readOnly = a.ReadOnlyHint && (a.DestructiveHint == nil || !*a.DestructiveHint)
		if t.title == "" {
			t.title = rt.Annotations.Title
		}
	}
	desc := strings.TrimSpace(rt.Description)
	if desc == "" {
		desc = fmt.Sprintf("Tool %q of MCP server %q.", rt.Name, srv.name)
	}
	t.spec = model.ToolSpec{Name: name, Description: desc, Parameters: permissiveSchema}
	if raw, err := json.Marshal(rt.InputSchema); err == nil && rt.InputSchema != nil && !bytes.Equal(raw, []byte("null")) {
		t.spec.Parameters = raw
		// A schema our validator cannot compile would make the tool
		// unusable; the server validates its arguments itself anyway.
		if _, err := tool.NewRegistry(t); err != nil {
			srv.log.Warn("mcp tool schema not usable; arguments are passed unchecked", "tool", rt.Name, "err", err)
			t.spec.Parameters = permissiveSchema
		}
	}
	return t
}

func (t *remoteTool) Spec() model.ToolSpec { return t.spec }

// Kind is "read" for tools the server annotates read-only, else "other".
func (t *remoteTool) Kind() string {
	if t.readOnly {
		return "read"
	}
	return "other"
}

// Title names the server and the tool for editors.
func (t *remoteTool) Title(json.RawMessage) string {
	name := t.title
	if name == "" {
		name = t.remote
	}
	return t.srv.name + ": " + name
}

// Server returns the name of the tool's server.
func (t *remoteTool) Server() string { return t.srv.name }

// Execute calls the tool on its server.
func (t *remoteTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	args := inv.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := t.authorize(ctx, inv, args); err != nil {
		return workspace.Failed(err, nil), nil
	}
	res, err := t.srv.session.CallTool(ctx, &mcpsdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		return tool.Result{}, &tool.Error{Code: CodeCallFailed,
			Message: fmt.Sprintf("MCP server %q: calling %s failed: %v", t.srv.name, t.remote, err), Err: err}
	}
	return toResult(res), nil
}

// authorize passes the call through its session's permission gate.
func (t *remoteTool) authorize(ctx context.Context, inv tool.Invocation, args json.RawMessage) error {
	if t.srv.gates == nil {
		return &tool.Error{Code: workspace.CodeNoWorkspace, Message: "MCP tools cannot run: no permission gate is configured"}
	}
	env, err := workspace.EnvFor(ctx, t.srv.gates, inv)
	if err != nil {
		return err
	}
	kind := workspace.KindOther
	if t.readOnly {
		kind = workspace.KindRead
	}
	return workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: t.spec.Name, Kind: kind,
		Title:  "MCP " + t.Title(args),
		Detail: callDetail(t.srv.name, t.remote, args),
	})
}

// callDetail shows an MCP call as the person should judge it: the
// server, the tool and the arguments (indented JSON in a code block).
func callDetail(server, remote string, args json.RawMessage) string {
	var pretty bytes.Buffer
	if json.Indent(&pretty, args, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(args)
	}
	body := pretty.String()
	fence := "```"
	for strings.Contains(body, fence) {
		fence += "`"
	}
	return fmt.Sprintf("MCP server `%s`, tool `%s`, arguments:\n%sjson\n%s\n%s", server, remote, fence, body, fence)
}

// toResult maps an MCP tool result to a tool result.
func toResult(res *mcpsdk.CallToolResult) tool.Result {
	out := tool.Result{Content: contentBlocks(res.Content)}
	if res.StructuredContent != nil {
		out.Raw = res.StructuredContent
		if len(out.Content) == 0 {
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				out.Content = []session.Block{session.Text(string(b))}
			}
		}
	}
	if len(out.Content) == 0 {
		out.Content = []session.Block{session.Text("(no output)")}
	}
	if res.IsError {
		out.IsError = true
		out.Error = &session.ErrorInfo{Code: CodeToolError, Message: session.JoinText(out.Content, "\n")}
	}
	return out
}

// contentBlocks maps MCP content to log blocks. The log holds no binary
// data: images, audio and blob resources become a short text note.
func contentBlocks(cs []mcpsdk.Content) []session.Block {
	var out []session.Block
	for _, c := range cs {
		switch c := c.(type) {
		case *mcpsdk.TextContent:
			out = append(out, session.Text(c.Text))
		case *mcpsdk.ImageContent:
			out = append(out, session.Text(fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))))
		case *mcpsdk.AudioContent:
			out = append(out, session.Text(fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))))
		case *mcpsdk.ResourceLink:
			out = append(out, session.Block{Type: session.BlockResourceLink, URI: c.URI, Name: c.Name, MimeType: c.MIMEType})
		case *mcpsdk.EmbeddedResource:
			r := c.Resource
			if r == nil {
				continue
			}
			if len(r.Blob) > 0 && r.Text == "" {
				out = append(out, session.Text(fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob))))
				continue
			}
			out = append(out, session.Block{Type: session.BlockResource, URI: r.URI, Text: r.Text, MimeType: r.MIMEType})
		default:
			if b, err := json.Marshal(c); err == nil {
				out = append(out, session.Text(string(b)))
			}
		}
	}
	return out
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}
