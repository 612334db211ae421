// Package openai implements model.Model for servers that speak the OpenAI
// chat-completions streaming format: DeepSeek, OpenAI, and OpenAI-compatible
// servers such as llama.cpp, vLLM, Ollama or OpenRouter. It is built on the
// official SDK (github.com/openai/openai-go/v3).
//
// # What it owns
//
//   - Configuration: ParseModelFlag and ConfigFromFlags read --model
//     PROVIDER/MODEL (deepseek/..., openai/..., openai-compatible/...),
//     --base-url and --api-key-env; New resolves the key from
//     DEEPSEEK_API_KEY, OPENAI_API_KEY or the named variable. Keys are never
//     logged: Config redacts them in LogValue, String and GoString, and the
//     SDK client is built without openai.NewClient, which would read
//     OPENAI_* variables from the environment on its own.
//   - Request mapping (request.go): system prompt, user/assistant/tool
//     messages, function tools with our JSON schemas, max tokens and
//     stream_options.include_usage.
//   - Response mapping (stream.go, wire.go): the SDK sends the request and
//     frames the SSE events; each event is decoded into our own small wire
//     structs (see wire.go for why). content → text-delta, DeepSeek's
//     reasoning_content → reasoning-delta, tool-call deltas per index (id
//     and name on first appearance only), then one usage chunk and one
//     finish chunk at the end of the stream.
//   - Failures (errors.go, retry.go): *ProviderError with a stable Code;
//     429, 5xx and connection failures retried with backoff honouring
//     Retry-After; a stream cut after some chunks yields those chunks and
//     then a CodeStreamCut error.
//
// # Layering
//
// Imports agent/model, agent/session, internal/errcode (ProviderError
// embeds the module's one typed-error shape), the SDK and the standard
// library. It must not import agent, subagent, acp or persistence.
//
// # Concurrency and ownership
//
// A Model is safe for concurrent use. Each Stream call owns its HTTP
// response: the body is closed when the stream ends, fails, or the
// consumer stops iterating early. Cancelling the context aborts the HTTP
// request (also while waiting between retries) and Stream yields an error
// wrapping context.Canceled and the context's cause. No goroutines are
// started. The HTTP client (Config.HTTPClient, or a private one) is shared
// by all calls and never closed by this package.
package openai
