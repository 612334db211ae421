// Package keyenv takes the provider's API key out of the process's
// environment once the agent has read it: the value is kept in memory,
// the variable is unset, and the bytes of the environment block the
// kernel shows in /proc/PID/environ are overwritten, so a command the
// agent runs outside the sandbox (same user, so allowed to read that
// file) cannot read the key there. The agent's own readers get the value
// through the getenv Hide returns.
//
// Layer: a leaf used by the command line (app/cli) when it builds the
// agent's configuration. It imports only the standard library and
// golang.org/x/sys; it must not import any package of this module.
//
// Concurrency: Hide changes process-wide state (the environment). Call
// it once, before anything else reads the named variables, from one
// goroutine.
package keyenv
