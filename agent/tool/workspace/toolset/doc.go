// Package toolset assembles the workspace tools: `read`, `write`, `edit`
// (package files), `glob`, `grep` (package search) and `bash` (package
// shell), all over one workspace.Resolver. It is the one constructor the
// host wires into an agent's tool registry.
//
// Layering: toolset imports the workspace tool packages, agent/tool and
// the standard library only; never acp, subagent, persistence or app.
package toolset
