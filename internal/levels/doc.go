// Package levels owns Down: the directories from a project's root (its
// git root) down to a working directory, the walk that both AGENTS.md
// instructions (agent/prompt) and agent definitions (agent/agentdef) are
// looked up along. It imports only the standard library and holds no
// state, so it is safe for concurrent use.
package levels
