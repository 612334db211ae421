// Package compact owns the policy of compaction, as pure functions over
// the model-visible history: where to cut (keeping whole turns and tool
// calls with their results), whether stubbing old tool results is enough,
// and the structured prompt that asks the model for a summary. The agent
// loop runs it and records the result as a session/compaction event.
//
// It imports agent/session, agent/model and agent/budget only; it must not
// import the loop (agent), acp, subagent or persistence.
package compact
