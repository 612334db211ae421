// Package delegation owns the names that the subagent runtime writes and
// that other packages read back: the delegation tool names, the _meta key
// that links a tool call to its child session, the child modes, and the
// keys of a delegation's structured result, and the record of a worktree
// settled at a later load (TypeWorktreeSettled), and the record of a
// child's question refused at its deadline (TypeQuestionRefused). The
// subagent runtime (which writes most of them), the ACP adapter and the
// transcript renderer (which read them) import this one leaf instead of
// repeating the strings, so the adapter never needs to import the runtime.
//
// It is a leaf: it must not import any package of this module.
//
// It holds constants and pure functions only: no state, safe for concurrent
// use.
package delegation
