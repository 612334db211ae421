// Package budget owns context accounting: how large each known model's
// context window is, what its tokens cost, a conservative estimate for
// text the provider has not counted yet, and the fold that derives a
// session's usage (tokens in context, cumulative tokens and cost) from its
// log. Usage is the one usage type of the module: the subagent budgets
// (subagent/budgets) sum it per route and per tree. Everything here is derived from the log and can be recomputed.
//
// It imports only agent/session and agent/model (for Route); it must not
// import the loop (agent), acp, subagent or persistence.
package budget
