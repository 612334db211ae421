// Package model declares what the agent loop needs from a language model: a
// streaming call that turns a Request (system prompt, history, tools) into a
// sequence of chunks. Implementations live in sub-packages: the keyless
// scripted model (agent/model/scripted), OpenAI-compatible providers
// (agent/model/openai) and Anthropic's Messages API
// (agent/model/anthropic); agent/model/recording wraps any of them to
// record its replies as a keyless scenario. A model that takes images
// implements ImageInput (capabilities.go).
//
// Layering: model imports only agent/session (for content blocks and the
// chunk vocabulary) and the standard library.
//
// Concurrency: a Model must be safe for concurrent use by many sessions.
// The iterator returned by Stream is used by one goroutine; stopping the
// iteration early (break) must release every resource of the call.
package model
