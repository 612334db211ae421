// Package policy owns the permission decision: given a session's mode,
// what the settings rules say, what the person answered with "always",
// the class of the path (inside the working directory, outside it, or a
// protected target) and the tool kind, Decide says allow, ask or deny,
// with the reason. It is a pure function, so every combination is tested
// in one table (decide_test.go) and every front end (the ACP server, a
// headless run) decides the same way; the front end only gathers the
// inputs, asks the person when told to, and renders the refusal.
//
// A child (subagent) session's mode is ChildMode (child.go): its root's,
// narrowed by the mode its agent definition asked for (widened only by
// the person's own definition, never out of plan).
//
// The package also owns what the decision is made over: the rules matched
// on both the path as written and the path it resolves to (Rules), the
// protected targets (Protector, ProtectedRel), and the rule an "always
// allow" answer saves (AlwaysRule, with exact commands escaped).
//
// Layering: policy imports agent/settings (the rule matcher) and the
// standard library only; it knows nothing of ACP, of sessions or of the
// tools (callers pass plain strings).
package policy
