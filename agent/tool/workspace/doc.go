// Package workspace declares what the workspace tools (read, write, edit,
// glob, grep, bash) need from the session they run in: its working
// directory, a way to read and write text files, a way to run commands,
// and a permission gate. The tools declare these interfaces; the ACP
// adapter implements them through the client (fs/*, terminal/*,
// session/request_permission) when the client advertises the capability,
// and local implementations do the same work otherwise.
//
// Layering: workspace imports agent/session, agent/tool and the standard
// library only. It never imports acp, subagent, persistence or app.
package workspace
