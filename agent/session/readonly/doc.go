// Package readonly holds the rules of sessions that are open for viewing
// only, and their words: a subagent session (a person may look at a child,
// never prompt it or change its mode or options), and a log damaged in the
// middle whose valid part is shown until it is repaired. It decides which
// stored read opens a damaged session's valid part (ValidPart), words the
// one refusal every changing request answers (Reason.Refuse, Damaged) and
// the notices that follow such a replay.
//
// Layer: below the protocol adapter (acp encodes the refusals and notices
// it returns; the codes are the contract's). It imports only agent/session
// and must not import acp, the subagent runtime, persistence or the
// composition.
//
// Concurrency: pure functions and values; ValidPart calls its reader once.
package readonly
