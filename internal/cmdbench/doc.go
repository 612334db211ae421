// Package cmdbench holds development tools that time the agent's own
// commands through a built binary, beside the same figure of another
// build (a previous release): see drive. It is not part of the binary
// and must not import any product package: it speaks ACP over the
// binary's stdio with an independent JSON-RPC client, so any build of
// acp-agent, old or new, can be driven the same way.
package cmdbench
