// Command drive times the agent's command path through a built binary:
// it starts BIN over its stdio (a jsonrpc2 client, independent of the
// agent's own SDK), opens a session in a fresh directory, runs one
// scripted turn of N sequential `bash` calls (each answered "allow once"
// when asked), then closes stdin and waits for the process to exit. It
// prints one line of figures: the turn's wall time per command and the
// time from stdin's close to the exit.
//
//	go build -o /tmp/acp-new ./cmd/acp-agent
//	go run ./internal/cmdbench/drive -bin /tmp/acp-new -commands 50 -runs 9
//
// With -vs OLD, the two binaries run in turn, run for run, and the
// median of the run pairs' ratios is printed too (a previous release
// built from a clone: git worktree add /tmp/old 341fd04 && go build -C
// /tmp/old -o /tmp/acp-old ./cmd/acp-agent).
//
// Any build that takes --data-dir and --model script:PATH can be driven,
// so a previous release built from a clone is timed the same way. Run it
// under /usr/bin/time -v to see the whole process.
//
// Layer: a development tool; it imports no product package.
package main
