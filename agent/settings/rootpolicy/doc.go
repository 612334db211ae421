// Package rootpolicy holds the settings in force for each root session
// and the environment its commands get: a root session's policy (user
// file and project file merged, package agent/settings) is loaded once,
// when first asked for, its problems logged once, and dropped with the
// session (Forget); every child of that root follows it. The command
// environment is the agent's own without secrets, filtered by that
// policy's env section.
//
// Layer: beside agent/settings, which alone reads and writes settings
// files; the ACP adapter uses this package (and its Policy and Sandbox
// aliases) instead, so acp imports no settings file code
// (internal/layering). It must not import acp, the subagent runtime,
// persistence or the composition.
//
// Concurrency: a Cache is safe for concurrent use; it lives as long as the
// connection that made it.
package rootpolicy
