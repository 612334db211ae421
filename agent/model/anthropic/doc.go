// Package anthropic is the model.Model of Anthropic's Messages API, on the
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2): --model
// anthropic/MODEL with ANTHROPIC_API_KEY.
//
// What it maps:
//   - streaming: text deltas, thinking deltas (reasoning chunks, shown as
//     agent_thought_chunk) with their signatures, redacted thinking, tool
//     use with streamed JSON input, usage and the stop reason;
//   - history: thinking blocks go back with their signatures (the API
//     verifies them across turns), tool results become tool_result blocks
//     of a user message, images become base64 image blocks;
//   - prompt caching: an explicit cache_control breakpoint on the system
//     prompt and the request-level cache_control, which the API places on
//     the last cacheable block (the last stable message). No message carries
//     a marker of its own, so the serialized tools, system and messages of
//     request N are a prefix of request N+1's (request_test.go);
//   - usage: input tokens (uncached + cache read + cache write), output
//     tokens, cache read and write tokens;
//   - errors: the same stable codes as the OpenAI-compatible provider
//     (PROVIDER_AUTH, PROVIDER_RATE_LIMITED, PROVIDER_UNAVAILABLE for 5xx
//     and 529 overloaded, PROVIDER_CONTEXT_LENGTH, PROVIDER_REJECTED, ...),
//     retried the same way (retry.go).
//
// The SDK builds and sends requests and reads error bodies; each stream
// event is decoded into the small structs of wire.go. The service is built
// from our options only, so no ANTHROPIC_* variable other than the key we
// name is read, and the SDK's own retries are off.
//
// Layering: anthropic imports agent/model, agent/session, internal/errcode
// and the SDK; nothing of the module imports it but the composition root.
package anthropic
