// Package acpschema validates JSON frames against the ACP v1 JSON Schema
// (the official TypeScript SDK 2.4.0's, embedded from v1/, see README.md).
// It is a test helper: tests of acp/, scenarios/ and cmd/ use it to check
// that every shape the agent writes, including those the Go SDK has no
// type for (subagent_update, session_message, StateUpdate, …), is one a
// client decodes. The released binary must not link it
// (internal/layering's binary test forbids it).
//
// It imports only the standard library, "testing" and
// santhosh-tekuri/jsonschema; it must not import any package of this
// module.
package acpschema
