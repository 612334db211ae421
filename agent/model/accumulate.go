package model

import (
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Accumulator assembles one call's reply from the chunks it streamed. The
// agent loop records the reply it builds; the recorder (agent/model/recording)
// keeps it as a script reply: both read the same chunks the same way.
// The zero value is ready to use.
type Accumulator struct {
	text, reasoning strings.Builder
	// thoughts are the closed reasoning blocks (signed or redacted) before
	// the open one in reasoning/sig.
	thoughts []session.Block
	sig      string
	calls    []*CallAcc
	usage    *session.Usage
	finish   string
	chunks   int
}

// CallAcc is one streamed tool call being assembled.
type CallAcc struct {
	Index int
	// ID and Name are the last non-empty ones streamed; a caller may give
	// a call without an ID one of its own.
	ID, Name string
	args     strings.Builder
}

// Arguments returns the call's arguments streamed so far.
func (c *CallAcc) Arguments() string { return c.args.String() }

// Add folds one chunk into the reply.
func (a *Accumulator) Add(c session.Chunk) {
	a.chunks++
	switch c.Type {
	case session.ChunkText:
		a.text.WriteString(c.Text)
	case session.ChunkReasoning:
		a.addReasoning(c)
	case session.ChunkToolCall:
		var tc *CallAcc
		for _, x := range a.calls {
			if x.Index == c.Index {
				tc = x
				break
			}
		}
		if tc == nil {
			tc = &CallAcc{Index: c.Index}
			a.calls = append(a.calls, tc)
		}
		if c.ID != "" {
			tc.ID = c.ID
		}
		if c.Name != "" {
			tc.Name = c.Name
		}
		tc.args.WriteString(c.Arguments)
	case session.ChunkFinish:
		a.finish = c.Finish
	}
	if c.Usage != nil {
		u := *c.Usage
		a.usage = &u
	}
}

// addReasoning folds a reasoning chunk into the reply. Reasoning stays one
// block unless the provider delimits blocks: a signature closes the open
// block (the next reasoning text starts another), and a redacted block
// (Data) stands alone. Providers that verify thinking sent back across
// turns need each block with its own signature.
func (a *Accumulator) addReasoning(c session.Chunk) {
	if c.Data != "" {
		a.closeReasoning()
		a.thoughts = append(a.thoughts, session.Block{Type: session.BlockReasoning, Data: c.Data})
		return
	}
	if c.Text != "" && a.sig != "" {
		a.closeReasoning()
	}
	a.reasoning.WriteString(c.Text)
	if c.Signature != "" {
		a.sig = c.Signature
	}
}

func (a *Accumulator) closeReasoning() {
	if a.reasoning.Len() == 0 && a.sig == "" {
		return
	}
	a.thoughts = append(a.thoughts, session.Block{Type: session.BlockReasoning, Text: a.reasoning.String(), Signature: a.sig})
	a.reasoning.Reset()
	a.sig = ""
}

// Chunks is the number of chunks added.
func (a *Accumulator) Chunks() int { return a.chunks }

// Text is the reply's text.
func (a *Accumulator) Text() string { return a.text.String() }

// ReasoningText is the text of all the reply's reasoning blocks, joined
// without separators (redacted blocks have none).
func (a *Accumulator) ReasoningText() string {
	if len(a.thoughts) == 0 {
		return a.reasoning.String()
	}
	var b strings.Builder
	for _, t := range a.thoughts {
		b.WriteString(t.Text)
	}
	b.WriteString(a.reasoning.String())
	return b.String()
}

// Calls are the reply's tool calls in the order they started.
func (a *Accumulator) Calls() []*CallAcc { return a.calls }

// Usage is the last usage streamed, or nil.
func (a *Accumulator) Usage() *session.Usage { return a.usage }

// Finish is the finish reason the model streamed ("" when none).
func (a *Accumulator) Finish() string { return a.finish }

// FinishReason is the streamed finish reason, else the one the reply
// implies: FinishToolCalls when it has tool calls, FinishStop otherwise.
func (a *Accumulator) FinishReason() string {
	if a.finish != "" {
		return a.finish
	}
	return a.ImpliedFinish()
}

// ImpliedFinish is the finish reason the reply's content implies.
func (a *Accumulator) ImpliedFinish() string {
	if len(a.calls) > 0 {
		return FinishToolCalls
	}
	return FinishStop
}

// Content renders the reply as message blocks: reasoning, text, tool
// calls. An interrupted reply keeps only reasoning and text: its tool calls
// were never dispatched and may be incomplete.
func (a *Accumulator) Content(interrupted bool) []session.Block {
	out := make([]session.Block, 0, 2+len(a.calls)+len(a.thoughts))
	out = append(out, a.thoughts...)
	if a.reasoning.Len() > 0 || a.sig != "" {
		out = append(out, session.Block{Type: session.BlockReasoning, Text: a.reasoning.String(), Signature: a.sig})
	}
	if a.text.Len() > 0 {
		out = append(out, session.Text(a.text.String()))
	}
	if !interrupted {
		for _, c := range a.calls {
			out = append(out, session.Block{Type: session.BlockToolCall, ID: c.ID, Name: c.Name, Arguments: c.args.String()})
		}
	}
	return out
}
