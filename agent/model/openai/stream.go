package openai

// This file maps the streamed chat-completion chunks onto session.Chunk.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/backoff"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// maxToolCalls bounds the tool-call index a stream may use, so a hostile
// or broken server cannot make us allocate without limit.
const maxToolCalls = 1024

// stream runs one call and yields its chunks, then a usage chunk (if the
// server reported usage) and a finish chunk, or an error. A stream that
// breaks after some chunks yields those chunks and then the error. An idle
// timeout before any chunk was yielded is retried like a failed open.
func (c *client) stream(ctx context.Context, modelID string, req model.Request, yield func(session.Chunk, error) bool) {
	params, err := buildParams(c.provider, modelID, req)
	if err != nil {
		yield(session.Chunk{}, err)
		return
	}
	c.log.DebugContext(ctx, "model request", "model", modelID, "messages", len(params.Messages), "tools", len(params.Tools))
	for first := 1; ; {
		attempts, retry := c.attempt(ctx, params, first, req, yield)
		if !retry {
			return
		}
		first = attempts + 1
	}
}

// attempt opens the stream (with the open-time retries) and relays it. It
// reports the attempts made and whether to start over: the stream went
// idle before yielding anything and attempts remain.
func (c *client) attempt(ctx context.Context, params oai.ChatCompletionNewParams, first int, req model.Request, yield func(session.Chunk, error) bool) (int, bool) {
	s, wd, attempts, err := c.open(ctx, params, first, req)
	if err != nil {
		yield(session.Chunk{}, err)
		return attempts, false
	}
	// Close releases the response body (and with it the connection) when
	// the consumer stops early; after a normal end it is a no-op.
	defer wd.Stop()
	defer s.Close()

	var st streamState
	yielded := false
	relay := func(ck session.Chunk, err error) bool {
		yielded = true
		return yield(ck, err)
	}
	for s.Next() {
		ck := s.Current()
		if err := st.apply(&ck, relay); err != nil {
			if !errors.Is(err, errStopped) {
				yield(session.Chunk{}, c.streamError(CodeStreamError, attempts, err))
			}
			return attempts, false
		}
	}
	if err := s.Err(); err != nil {
		if ctx.Err() != nil {
			yield(session.Chunk{}, c.ctxErr(ctx))
			return attempts, false
		}
		code := CodeStreamCut
		var se *ssestream.StreamError
		var je *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &je) || errors.As(err, &te) {
			code = CodeStreamError
		}
		if wd.Fired() {
			code, err = CodeIdleTimeout, context.Cause(wd.Context())
			if !yielded && attempts <= c.cfg.MaxRetries {
				pe := c.streamError(code, attempts, err).(*ProviderError)
				d, _ := c.delay(attempts, nil, time.Now())
				c.retryNotice(ctx, req, pe, attempts, d)
				if !backoff.Sleep(ctx, d) {
					yield(session.Chunk{}, c.ctxErr(ctx))
					return attempts, false
				}
				return attempts, true
			}
		}
		yield(session.Chunk{}, c.streamError(code, attempts, err))
		return attempts, false
	}
	if st.finish == "" {
		// A clean end of the body without a finish reason: the server or a
		// proxy dropped the rest of the answer.
		yield(session.Chunk{}, c.streamError(CodeStreamCut, attempts, errors.New("stream ended without a finish reason")))
		return attempts, false
	}
	if st.usage != nil && !yield(session.Chunk{Type: session.ChunkUsage, Usage: st.usage}, nil) {
		return attempts, false
	}
	yield(session.Chunk{Type: session.ChunkFinish, Finish: st.finishReason()}, nil)
	return attempts, false
}

func (c *client) streamError(code Code, attempts int, err error) error {
	pe := &ProviderError{Provider: c.provider, Status: 200, Coded: errcode.Coded[Code]{Code: code, Err: err}}
	if attempts > 1 {
		pe.Attempts = attempts
	}
	return pe
}

// ctxErr wraps the context's error and, when it differs, its cause, so
// callers can test for context.Canceled and for their own cause alike.
func (c *client) ctxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && cause != err {
		return fmt.Errorf("%s: request aborted: %w: %w", c.provider, err, cause)
	}
	return fmt.Errorf("%s: request aborted: %w", c.provider, err)
}

// errStopped reports that the consumer stopped iterating.
var errStopped = errors.New("openai: consumer stopped")

// streamState carries what one stream has shown so far.
type streamState struct {
	finish  string // raw finish_reason of choice 0
	sawTool bool
	// calls[i] records whether tool call i has had its id and name
	// emitted: the chunk vocabulary carries them on the first delta only,
	// while some servers repeat them on every delta.
	calls []callState
	// lastCall is the index used by the previous tool-call delta, for
	// servers that omit "index".
	lastCall int
	usage    *session.Usage
}

type callState struct {
	id   string // first id seen, "" until then
	name bool
}

// apply yields the chunks carried by one streamed chunk.
func (st *streamState) apply(ck *wireChunk, yield func(session.Chunk, error) bool) error {
	for i := range ck.Choices {
		ch := &ck.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		d := &ch.Delta
		r := d.ReasoningContent
		if r == "" {
			r = d.Reasoning
		}
		if r != "" {
			if !yield(session.Chunk{Type: session.ChunkReasoning, Text: string(r)}, nil) {
				return errStopped
			}
		}
		if d.Content != "" {
			if !yield(session.Chunk{Type: session.ChunkText, Text: d.Content}, nil) {
				return errStopped
			}
		}
		if d.Refusal != "" {
			if !yield(session.Chunk{Type: session.ChunkText, Text: d.Refusal}, nil) {
				return errStopped
			}
		}
		for j := range d.ToolCalls {
			out, ok, err := st.toolDelta(&d.ToolCalls[j])
			if err != nil {
				return err
			}
			if ok && !yield(out, nil) {
				return errStopped
			}
		}
		if ch.FinishReason != "" {
			st.finish = ch.FinishReason
		}
	}
	if ck.Usage != nil {
		st.usage = ck.Usage.usage()
	}
	return nil
}

func (st *streamState) toolDelta(tc *wireToolCall) (session.Chunk, bool, error) {
	st.sawTool = true
	var idx int
	if tc.Index != nil {
		idx = *tc.Index
	} else {
		// No index: a different id starts the next call, anything
		// else continues the current one.
		idx = st.lastCall
		if tc.ID != "" && idx < len(st.calls) && st.calls[idx].id != "" && st.calls[idx].id != tc.ID {
			idx++
		}
	}
	if idx < 0 || idx >= maxToolCalls {
		return session.Chunk{}, false, fmt.Errorf("tool call index %d out of range", idx)
	}
	st.lastCall = idx
	for len(st.calls) <= idx {
		st.calls = append(st.calls, callState{})
	}
	cs := &st.calls[idx]
	out := session.Chunk{Type: session.ChunkToolCall, Index: idx, Arguments: tc.Function.Arguments}
	if tc.ID != "" && cs.id == "" {
		out.ID, cs.id = tc.ID, tc.ID
	}
	if tc.Function.Name != "" && !cs.name {
		out.Name, cs.name = tc.Function.Name, true
	}
	return out, out.ID != "" || out.Name != "" || out.Arguments != "", nil
}

// finishReason maps the wire finish_reason to model.Finish*. Servers that
// end a tool-calling answer with "stop" (some local ones do) or with an
// unknown reason are reported as tool calls when tool calls were streamed.
func (st *streamState) finishReason() string {
	switch st.finish {
	case "length":
		return model.FinishLength
	case "content_filter":
		return model.FinishContentFilter
	case "tool_calls", "function_call":
		return model.FinishToolCalls
	}
	if st.sawTool {
		return model.FinishToolCalls
	}
	return model.FinishStop
}
