// Package layering holds no code: its tests enforce the one-way package
// dependencies described in the house style (agent and subagent never
// depend on the ACP SDK, on acp or on persistence; persistence depends only
// on agent/session and the standard library), and that the subagent
// runtime and its drivers meet only at package driver (seams_test.go).
// shared_test.go keeps the shared vocabularies leaves (internal/errcode,
// agent/delegation, agent/transcript), keeps acp off the subagent runtime,
// drivers, storage and the composition, and keeps internal/testhooks
// reachable only from app and scenarios outside tests.
// store_test.go checks the store seam: agent/session depends on no other
// package of the module, and the agent loop only on agent/session,
// agent/model and agent/tool (plus the context policy, agent/budget and
// agent/compact, which are leaves over session and model).
// binary_test.go keeps test-only code out of the binary (package testing,
// goldie, goleak, the test helpers under internal/) and sourcegraph/jsonrpc2
// inside the two JSON-RPC clients that ship: the scenario runner and exec (app/headless).
// gitrun_test.go keeps every git the agent starts inside internal/gitrun.
package layering
