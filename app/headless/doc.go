// Package headless is the client side of "acp-agent exec": it drives one
// prompt through an ACP agent over a byte stream (in practice the real
// server of the composition, in process, over io.Pipe) the way an editor
// would — initialize, session/new or session/resume, session/set_mode,
// session/prompt, session/cancel — and answers permission requests
// without a person. It renders what the agent sent: the answer text, or
// every session/update as one JSON line.
//
// It is written on sourcegraph/jsonrpc2, independent of the ACP SDK the
// agent uses, like the scenario runner's client. It imports no package of
// the module (internal/layering allows it jsonrpc2): the composition
// (package app) owns the process, the flags and the exit codes.
package headless
