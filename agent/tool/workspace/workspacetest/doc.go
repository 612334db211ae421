// Package workspacetest holds the small helpers the workspace tools'
// tests share: a caller naming a session, and readers of a tool result's
// text and error code.
//
// Layering: imports agent/session and agent/tool only; imported by tests.
//
// It holds no state; it must not import acp, app, persistence or subagent.
package workspacetest
