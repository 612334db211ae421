// Package files provides the model-facing file tools `read`, `write` and
// `edit`. They resolve paths against the session cwd (workspace.ResolvePath),
// read and write through the session's workspace.Files (the editor's
// buffers when the client offers fs, the disk otherwise), ask the
// session's permission gate before every write and edit (showing the
// diff) and before any access outside the cwd, and record the locations
// and diffs they touched on their results.
//
// Layering: files imports agent/tool/workspace, agent/tool, agent/model,
// agent/session and the standard library only; never acp, subagent,
// persistence or app, and never a concrete Files implementation.
package files
