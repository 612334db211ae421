// Package todo defines the model's "todo" tool: the model writes its whole
// task list at once (content, status, priority per item) and editors show
// it as the session's plan. The tool keeps no state: each call's
// normalized list is its result's raw value ({"todos": [...]}), recorded
// in the session log, so the current plan is always the raw value of the
// latest successful todo call — live and after session/load alike.
//
// Layering: todo imports agent/tool, agent/model and agent/session only.
//
// Concurrency: the tool is stateless, so one value serves every session at
// once. It must not import acp, app, persistence or subagent.
package todo
