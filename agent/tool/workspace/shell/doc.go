// Package shell provides the model-facing `bash` tool: one shell command
// run in the session cwd through the session's workspace.Commands (a
// client terminal embedded in the tool call when the client offers one,
// a local process group otherwise), after the session's permission gate
// allowed it, with a timeout and a capped output tail.
//
// Layering: shell imports agent/tool/workspace, agent/tool, agent/model,
// agent/session and the standard library only; never acp, subagent,
// persistence or app, and never a concrete Commands implementation.
package shell
