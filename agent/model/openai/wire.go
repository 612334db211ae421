package openai

// This file defines the wire shape of a streamed chunk as we decode it.
//
// Requests, HTTP, authentication and error bodies go through the SDK, and so
// does the SSE framing (packages/ssestream), but each event is decoded into
// these small structs with encoding/json instead of the SDK's
// ChatCompletionChunk. The SDK's reflective decoder, which also records
// metadata for every field, cost 5-10 times as much per chunk (54 allocations
// and 7 KB against 12 and 0.8 KB in BenchmarkStreamChunk), and its typed
// delta has no field for reasoning_content anyway.

import (
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/session"
)

type wireChunk struct {
	Choices []wireChoice `json:"choices"`
	// Usage is null on all chunks but the last (stream_options.include_usage).
	Usage *wireUsage `json:"usage"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason string    `json:"finish_reason"`
}

type wireDelta struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// ReasoningContent is DeepSeek's (and llama.cpp's) reasoning text;
	// Reasoning is the name vLLM and OpenRouter use. Values that are not
	// strings are ignored rather than failing the chunk.
	ReasoningContent lenientString  `json:"reasoning_content"`
	Reasoning        lenientString  `json:"reasoning"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	// Index is nil when a server omits it.
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// PromptCacheHitTokens is DeepSeek's count of cached prompt tokens;
	// PromptTokensDetails.CachedTokens is OpenAI's.
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
	PromptTokensDetails  *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// CompletionTokensDetails.ReasoningTokens counts the reasoning part
	// of the completion (OpenAI's reasoning models).
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usage maps the wire usage onto the provider-neutral struct.
func (u *wireUsage) usage() *session.Usage {
	out := &session.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, CacheReadTokens: u.PromptCacheHitTokens}
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > out.CacheReadTokens {
		out.CacheReadTokens = u.PromptTokensDetails.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil && d.ReasoningTokens > 0 {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// lenientString decodes a JSON string and ignores any other value.
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = lenientString(v)
	return nil
}
