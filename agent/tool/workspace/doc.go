// Package workspace declares what the workspace tools (read, write, edit,
// glob, grep, bash) need from the session they run in: its working
// directory, a way to read and write text files, a way to run commands,
// and a permission gate. The tools declare these interfaces; the ACP
// adapter implements them through the client (fs/*, terminal/*,
// session/request_permission) when the client advertises the capability,
// and local implementations (package local) do the same work otherwise.
//
// It also owns the rules the tools share: ResolvePath (paths against the
// session cwd; outside-cwd detection through "..", symlinks and hard
// links, with the identity of what was checked), CheckedFiles / ReadFile
// / WriteFile (open exactly what was checked; PATH_CHANGED otherwise),
// the command marker recorded in the log (TypeProcess), EnvFor
// and Authorize (a missing gate refuses), the failure codes, and Failed
// (a model-visible error result that keeps the code and the display).
//
// Subpackages: files (read, write, edit), search (glob, grep), shell
// (bash), local (os-backed Files and Commands, simple gates), toolset
// (all tools over one Resolver: toolset.Tools), beneath (reads of the
// agent's own configuration files, definitions and skills, beneath a
// root).
//
// Layering: workspace imports agent/session, agent/tool and the standard
// library only. It and its subpackages never import acp, subagent,
// persistence or app.
package workspace
