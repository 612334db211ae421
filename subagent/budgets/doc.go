// Package budgets owns what a subagent tree spends and how far it may go:
// the usage of one session folded from its own log (tokens, and cost at
// the price table's list prices), its roll-up over a tree, the limits a
// child runs under (maxTokens, maxCostUsd, maxTurns, timeout), the rule
// that a call may narrow them and never widen them, the check that ends a
// turn with stop reason "budget", the durable limits record that a cold
// resume reads back, a tree meter per root session, and the stall
// watchdog (an injectable clock).
//
// Everything here is pure or owns only its own small state: the subagent
// runtime wires it to agents (the loop's Limit hook) and to listings.
//
// It imports agent/session, agent/model, agent/budget (the price table and
// the Usage type every layer shares)
// and agent/projection (the usage unit); it must not import the loop
// (agent), subagent, acp, app or persistence.
package budgets
