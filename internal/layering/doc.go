// Package layering holds no code: its test enforces the one-way package
// dependencies described in the house style (agent and subagent never
// depend on the ACP SDK, on acp or on persistence; persistence depends only
// on agent/session and the standard library).
package layering
