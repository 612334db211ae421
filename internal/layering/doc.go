// Package layering holds no code: its tests enforce the one-way package
// dependencies described in the house style (agent and subagent never
// depend on the ACP SDK, on acp or on persistence), and the store seam
// (store_test.go): persistence depends only on agent/session and the
// standard library, agent/session on no other package of the module, and
// the agent loop only on agent/session, agent/model and agent/tool.
package layering
