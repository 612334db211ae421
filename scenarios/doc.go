// Package scenarios runs keyless scripted scenarios against the real agent
// composition and records them for golden comparison. It owns the scenario
// file format (scenarios/<name>/scenario.yaml, embedded), its parser, the
// runner that drives the agent as an ACP client written on
// github.com/sourcegraph/jsonrpc2, the recorder (wire transcript, session
// logs, model requests), the framing of the human-readable transcript
// (client steps, subagent tree, list_agents outputs; each conversation is
// rendered by agent/transcript in its Compact style, the one renderer
// "sessions show" also uses), and the "acp-agent scenario" subcommand.
// Goldens live in snapshots/<name>/.
//
// Layering: scenarios sits at the top with cmd/acp-agent. It imports app
// (the composition, with its test-only knobs through internal/testhooks),
// agent/transcript, persistence (to seed sessions exactly as the agent
// writes them), the agent session/model packages and the scripted model;
// nothing imports scenarios except cmd/acp-agent. It never imports the ACP
// SDK: the client side is jsonrpc2 so the wire is checked independently.
//
// Concurrency: one run is driven by one goroutine (the caller of Run or
// Record), which executes steps strictly in order. Waits block that
// goroutine on the watcher, which is fed synchronously by a session.Store
// observer (under each session's append lock, so it only folds facts and
// signals) and by the model decorator (on agent loop goroutines). The
// jsonrpc2 handler runs on the client's read loop, answers synchronously
// and never calls the agent. Runs share no state, so scenarios run in
// parallel.
//
// Ownership: a run owns its agent process (System), both pipes and the
// client connection. Stopping a process means closing the agent's stdin
// and waiting until its Serve returned (shutdown, flush, Close), then
// until the client connection saw EOF; so every goroutine a run starts
// has ended when Record returns, and the data directory is complete when
// it is read. The caller owns the root directory (Run removes its own).
package scenarios
