// Package cli is the command line of the acp-agent binary: the root flags
// and their environment variables, serving ACP on stdin/stdout (with
// --record), and the commands: exec (one prompt without an editor),
// sessions (list, show with usage, repair), agents (the subagent tree of
// a stored session, or the agent definitions of a directory) and help.
// cmd/acp-agent calls Main with the commands other packages add (the
// scenario runner's).
//
// main.go holds Main and Run (flags, dispatch, the exit status: 0 ok,
// 1 failure, 2 usage error, 3 refused or cancelled), serve and
// serveConfig (the composition's app.Config from the flags, settings
// and environment, the same for serving and exec); cli.go the command
// tree (Command, help at every level, UsageError); process.go Process,
// the signals, exit and terminal check a test passes instead of the
// real ones. The data commands only read (they never create the data
// directory) and report through dataerrors.go.
//
// Layer: above the composition root. It imports app (and app/headless
// through it), agent/model/recording/live, persistence and agent
// packages; nothing but cmd/acp-agent, scenarios and tests imports it,
// and app must never import it (internal/layering checks it).
//
// Concurrency and lifetime: a command runs on the caller's goroutine and
// owns what it builds (a store, an App) until it returns; serving's
// goroutines belong to app.App.Run. exec's signal goroutine ends with the
// run; a second SIGINT exits through Process.Exit.
package cli
