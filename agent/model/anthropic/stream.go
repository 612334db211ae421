package anthropic

// This file maps the streamed events onto session.Chunk.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/backoff"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// maxBlocks bounds the content block index a stream may use.
const maxBlocks = 1024

var errStopped = errors.New("anthropic: consumer stopped")

func (m *Model) stream(ctx context.Context, modelID string, req model.Request, yield func(session.Chunk, error) bool) {
	params, err := buildParams(m.cfg, modelID, req)
	if err != nil {
		yield(session.Chunk{}, err)
		return
	}
	m.log.DebugContext(ctx, "model request", "model", modelID, "messages", len(params.Messages), "tools", len(params.Tools))
	// An overloaded or rate-limited error event before any content is
	// retried with the same backoff as the HTTP status would be (the API
	// sends them in a 200 stream); after content the call ends.
	shown := false
	out := func(c session.Chunk, err error) bool {
		if err == nil {
			shown = true
		}
		return yield(c, err)
	}
	for retry := 1; ; retry++ {
		pe := m.streamOnce(ctx, params, req, out)
		if pe == nil {
			return
		}
		if shown || !retryable(pe.Code) || retry > m.cfg.MaxRetries {
			if retry > 1 {
				pe.Attempts = max(pe.Attempts, retry)
			}
			yield(session.Chunk{}, pe)
			return
		}
		d, _ := m.delay(retry, nil)
		m.retryNotice(ctx, req, pe, retry, d)
		if !backoff.Sleep(ctx, d) {
			yield(session.Chunk{}, ctxErr(ctx))
			return
		}
	}
}

// streamOnce opens the stream and yields its chunks. It returns the error
// event of the stream, or its idle timeout, instead of yielding it (the
// caller decides whether to retry); every other failure it yields itself.
func (m *Model) streamOnce(ctx context.Context, params sdk.MessageNewParams, req model.Request, yield func(session.Chunk, error) bool) *ProviderError {
	dec, wd, attempts, err := m.open(ctx, params, req)
	if err != nil {
		yield(session.Chunk{}, err)
		return nil
	}
	defer wd.Stop()
	defer dec.Close()
	st := streamState{calls: map[int]int{}}
	for dec.Next() {
		ev := dec.Event()
		if ev.Type == "ping" || len(ev.Data) == 0 {
			continue
		}
		var w wireEvent
		if err := json.Unmarshal(ev.Data, &w); err != nil {
			yield(session.Chunk{}, streamError(CodeStreamError, attempts, fmt.Errorf("event %q: %w", ev.Type, err)))
			return nil
		}
		if w.Type == "" {
			w.Type = ev.Type
		}
		if w.Type == "error" {
			pe := streamError(CodeStreamError, attempts, nil)
			if w.Error != nil {
				pe.ErrorType, pe.Message = w.Error.Type, w.Error.Message
				// An overloaded or rate-limited stream carries the same
				// classification as the HTTP error would.
				if c := codeOf(200, w.Error.Type, w.Error.Message); c != CodeRejected {
					pe.Code = c
				}
			}
			pe.InStream = true
			return pe
		}
		if err := st.apply(&w, yield); err != nil {
			if !errors.Is(err, errStopped) {
				yield(session.Chunk{}, streamError(CodeStreamError, attempts, err))
			}
			return nil
		}
		if st.stopped {
			break
		}
	}
	if err := dec.Err(); err != nil {
		if ctx.Err() != nil {
			yield(session.Chunk{}, ctxErr(ctx))
			return nil
		}
		if wd.Fired() {
			// Returned, not yielded: before any content the caller
			// retries it like a failed open.
			return streamError(CodeIdleTimeout, attempts, context.Cause(wd.Context()))
		}
		yield(session.Chunk{}, streamError(CodeStreamCut, attempts, err))
		return nil
	}
	if !st.stopped {
		yield(session.Chunk{}, streamError(CodeStreamCut, attempts, errors.New("stream ended before message_stop")))
		return nil
	}
	if !yield(session.Chunk{Type: session.ChunkUsage, Usage: st.usage()}, nil) {
		return nil
	}
	yield(session.Chunk{Type: session.ChunkFinish, Finish: st.finishReason()}, nil)
	return nil
}

func streamError(code Code, attempts int, err error) *ProviderError {
	pe := &ProviderError{Status: 200, Coded: errcode.Coded[Code]{Code: code, Err: err}}
	if attempts > 1 {
		pe.Attempts = attempts
	}
	return pe
}

// streamState is what one stream has shown so far.
type streamState struct {
	// calls maps a tool_use block's index to its tool-call index (the
	// chunk vocabulary numbers calls 0, 1, ... within the step).
	calls   map[int]int
	stop    string
	stopped bool
	// usage parts: message_start carries the input side, message_delta
	// the (cumulative) output and, on some servers, updated input counts.
	input, output, cacheRead, cacheWrite int
}

func (st *streamState) apply(w *wireEvent, yield func(session.Chunk, error) bool) error {
	emit := func(c session.Chunk) error {
		if !yield(c, nil) {
			return errStopped
		}
		return nil
	}
	if w.Index < 0 || w.Index >= maxBlocks {
		return fmt.Errorf("content block index %d out of range", w.Index)
	}
	switch w.Type {
	case "message_start":
		if w.Message != nil {
			st.addUsage(&w.Message.Usage)
		}
	case "content_block_start":
		cb := w.ContentBlock
		if cb == nil {
			return errors.New("content_block_start without content_block")
		}
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				return emit(session.Chunk{Type: session.ChunkText, Text: cb.Text})
			}
		case "thinking":
			if cb.Thinking != "" || cb.Signature != "" {
				return emit(session.Chunk{Type: session.ChunkReasoning, Text: cb.Thinking, Signature: cb.Signature})
			}
		case "redacted_thinking":
			return emit(session.Chunk{Type: session.ChunkReasoning, Data: cb.Data})
		case "tool_use":
			idx := len(st.calls)
			st.calls[w.Index] = idx
			return emit(session.Chunk{Type: session.ChunkToolCall, Index: idx, ID: cb.ID, Name: cb.Name})
		}
	case "content_block_delta":
		d := w.Delta
		if d == nil {
			return errors.New("content_block_delta without delta")
		}
		switch d.Type {
		case "text_delta":
			return emit(session.Chunk{Type: session.ChunkText, Text: d.Text})
		case "thinking_delta":
			return emit(session.Chunk{Type: session.ChunkReasoning, Text: d.Thinking})
		case "signature_delta":
			return emit(session.Chunk{Type: session.ChunkReasoning, Signature: d.Signature})
		case "input_json_delta":
			idx, ok := st.calls[w.Index]
			if !ok {
				return fmt.Errorf("input_json_delta for block %d, which is not a tool_use", w.Index)
			}
			if d.PartialJSON != "" {
				return emit(session.Chunk{Type: session.ChunkToolCall, Index: idx, Arguments: d.PartialJSON})
			}
		}
	case "message_delta":
		if w.Delta != nil && w.Delta.StopReason != "" {
			st.stop = w.Delta.StopReason
		}
		if w.Usage != nil {
			st.addUsage(w.Usage)
		}
	case "message_stop":
		st.stopped = true
	}
	return nil
}

func (st *streamState) addUsage(u *wireUsage) {
	if u.InputTokens != nil {
		st.input = *u.InputTokens
	}
	if u.OutputTokens != nil {
		st.output = *u.OutputTokens
	}
	if u.CacheReadInputTokens != nil {
		st.cacheRead = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		st.cacheWrite = *u.CacheCreationInputTokens
	}
}

// usage reports all prompt tokens as input (the API's input_tokens counts
// only those after the last cache breakpoint), with the cached parts
// broken out.
func (st *streamState) usage() *session.Usage {
	return &session.Usage{
		InputTokens:      st.input + st.cacheRead + st.cacheWrite,
		OutputTokens:     st.output,
		CacheReadTokens:  st.cacheRead,
		CacheWriteTokens: st.cacheWrite,
	}
}

func (st *streamState) finishReason() string {
	switch st.stop {
	case "max_tokens", "model_context_window_exceeded":
		return model.FinishLength
	case "refusal":
		return model.FinishContentFilter
	case "tool_use":
		return model.FinishToolCalls
	}
	if len(st.calls) > 0 {
		return model.FinishToolCalls
	}
	return model.FinishStop
}
