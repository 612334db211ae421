// Package tool declares model-facing tools and the registry the agent loop
// dispatches them through. Arguments are validated against each tool's JSON
// schema before Execute runs; invalid arguments and tool failures become
// error results the model sees, never crashes.
//
// Layering: tool imports agent/session and agent/model only. The calling
// agent is passed as the Caller interface so that tools living in higher
// layers (package subagent) can reach their *agent.Agent without an import
// cycle.
//
// Concurrency: a Registry is safe for concurrent use. Execute may be called
// concurrently for different calls.
package tool
