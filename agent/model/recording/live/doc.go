// Package live records a live run of the agent as a keyless scenario:
// Exec is the recorder of one "acp-agent exec --record" run, Serve the
// recorder of one served connection ("acp-agent --record"). Each wraps
// the composition's model with a recording.Recorder (package recording,
// the model boundary), taps the workspace resolver's permission gate so a
// file is snapshotted only when a file tool was allowed to touch it
// (workspace.go), observes the live session store for what the
// model boundary cannot see (the files a search found, settlement
// notices and the turns they started), and Serve taps the ACP
// connection's lines to turn what the editor sent into client steps.
//
// Layer: agent (a leaf beside package recording). It owns only its
// recorder state; the composition it records (app) is given to it as a
// session store and plain values, so it must not import app, app/cli,
// acp, persistence or subagent.
//
// Concurrency and lifetime: a recorder lives for one run or connection.
// Its observer, model wrapper and taps run on the agent's and the
// connection's goroutines and lock the state they note; Write runs once,
// after the run or the server has stopped.
package live
