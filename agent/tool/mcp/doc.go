// Package mcp connects an agent session to the MCP (Model Context Protocol)
// servers an editor names in session/new or session/load, using the
// official Go SDK (github.com/modelcontextprotocol/go-sdk), and offers each
// server's tools to the model as ordinary tools named
// "mcp__<server>__<tool>".
//
// Start connects every configured server concurrently (stdio: a child
// process in the session's cwd; http: streamable HTTP; sse: the older
// HTTP+SSE transport), each within a start timeout covering the MCP
// initialize handshake and the tool listing. A server that cannot start is
// reported as a Failure and left out; the others keep working. The
// returned Set owns every connection and child process; Close stops them
// all and waits until they are gone.
//
// Tool results map MCP content to log blocks: text as text, resource links
// and embedded text resources as resource blocks, images, audio and binary
// resources as a short text placeholder (the log keeps no binary data);
// structuredContent becomes the result's raw value. isError makes an error
// result. A tool is ACP kind "read" when the server annotates it read-only
// (readOnlyHint, and not destructiveHint), else "other". Every call first
// passes the permission gate of the session that makes it
// (Options.Permissions): read-only tools as reads, the others as
// workspace.KindOther, which asks, is refused in plan mode, and is subject
// to settings rules by its name. Without a gate no call runs.
//
// Layering: mcp imports agent/tool, agent/tool/workspace (the gate's
// request type), agent/model and agent/session; it must
// not import acp, app, subagent or persistence (the ACP layer translates
// its McpServer values into ServerConfig).
//
// Concurrency and ownership: Start joins every goroutine it starts before
// returning. A Set is safe for concurrent use; its tools may run
// concurrently. Close is idempotent and waits for every server to stop.
package mcp
