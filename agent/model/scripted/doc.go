// Package scripted is the keyless scripted model: it replays replies from
// a YAML script instead of calling a provider, so scenario runs and tests
// are deterministic and need no network or API key. The script format is
// documented in scenarios/README.md ("Model script").
//
// Replies are chosen by model.Caller: script[ScriptKey][Call], where
// ScriptKey is "main" for top-level sessions and the delegation label for
// subagent children, and Call counts the session's earlier model calls over
// its own log. Selection therefore depends only on the session's own
// history, not on scheduling, and survives restarts. A missing key falls
// back to the key "*"; a missing key or index fails loudly with a
// *ScriptError.
//
// Layering: imports agent/model, agent/session, go.yaml.in/yaml/v3 and the
// standard library.
//
// Concurrency: a Script is immutable after Parse and the model is
// stateless, so both are safe for concurrent use by many sessions.
package scripted
