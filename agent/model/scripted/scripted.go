package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// FallbackKey is the script key used when the caller's key is absent.
const FallbackKey = "*"

// CodeScriptMismatch is the error code of a request the script has no
// reply for.
const CodeScriptMismatch = "SCRIPT_MISMATCH"

// CodeScripted is the error code of a scripted failure entry.
const CodeScripted = "MODEL_FAILED"

// Script maps script keys to their replies, in call order.
type Script struct {
	Replies map[string][]Reply
}

// Reply is one scripted model reply.
type Reply struct {
	Text      string     `yaml:"text"`
	Reasoning string     `yaml:"reasoning"`
	ToolCalls []ToolCall `yaml:"tool_calls"`
	Usage     *Usage     `yaml:"usage"`
	// Finish is stop, tool-calls, length or content-filter; empty derives
	// tool-calls when there are tool calls, else stop.
	Finish string `yaml:"finish"`
	// Error makes the call fail with this message: before any chunk, or
	// after the reply's chunks when ErrorAfterChunks is set.
	Error            string `yaml:"error"`
	ErrorAfterChunks bool   `yaml:"error_after_chunks"`
	// ContextLengthExceeded makes the error a refusal of a request that
	// does not fit the context window (it wraps model.ErrContextLength,
	// as a provider's 400 context_length_exceeded does).
	ContextLengthExceeded bool `yaml:"context_length_exceeded"`
	// StreamBroken makes the error a stream that stalled or was cut after
	// the response opened (it wraps model.ErrStreamBroken, as a
	// provider's idle timeout or cut stream does), which the agent answers
	// by retrying the request once. With ErrorAfterChunks it scripts a
	// partial answer that stalls.
	StreamBroken bool `yaml:"stream_broken"`
	// Hang streams the reply's text and reasoning chunks, then blocks until
	// the call's context is cancelled and fails with its cause.
	Hang bool `yaml:"hang"`
}

// ToolCall is one scripted tool call. Arguments is the raw JSON text
// handed to the tool, kept verbatim (it is not checked, so a script can
// exercise invalid arguments).
type ToolCall struct {
	ID        string `yaml:"id"`
	Name      string `yaml:"name"`
	Arguments string `yaml:"arguments"`
}

// Usage is a scripted token count.
type Usage struct {
	Input  int `yaml:"input"`
	Output int `yaml:"output"`
	// Cached is how many of Input were read from the prompt cache;
	// Reasoning how many of Output were reasoning.
	Cached    int `yaml:"cached"`
	Reasoning int `yaml:"reasoning"`
}

// file is the document shape: only the model section is read, so a
// scenario file can carry other top-level sections.
type file struct {
	Model yaml.Node `yaml:"model"`
}

// Parse reads a script from YAML. The document must be a mapping with a
// "model" mapping from script keys to lists of replies; unknown reply
// fields are errors.
func Parse(data []byte) (*Script, error) {
	var f file
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse script: %w", err)
	}
	if f.Model.Kind == 0 {
		return nil, errors.New(`the script has no "model" section`)
	}
	if f.Model.Kind != yaml.MappingNode {
		return nil, fmt.Errorf(`line %d: "model" must map script keys to lists of replies`, f.Model.Line)
	}
	if err := checkFields(&f.Model); err != nil {
		return nil, err
	}
	var replies map[string][]Reply
	if err := f.Model.Decode(&replies); err != nil {
		return nil, fmt.Errorf("parse model section: %w", err)
	}
	s := &Script{Replies: replies}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Fields a script may use, per mapping level.
var (
	replyFields = map[string]bool{"text": true, "reasoning": true, "tool_calls": true, "usage": true,
		"finish": true, "error": true, "error_after_chunks": true, "context_length_exceeded": true, "stream_broken": true,
		"hang": true}
	callFields  = map[string]bool{"id": true, "name": true, "arguments": true}
	usageFields = map[string]bool{"input": true, "output": true, "cached": true, "reasoning": true}
)

// checkFields rejects unknown keys in replies, tool calls and usage, so a
// misspelt field fails loudly with its line instead of being ignored.
func checkFields(m *yaml.Node) error {
	unknown := func(n *yaml.Node, allowed map[string]bool, what string) error {
		if n.Kind != yaml.MappingNode {
			return nil // the typed decode reports shape errors
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !allowed[k.Value] {
				return fmt.Errorf("line %d: unknown %s field %q", k.Line, what, k.Value)
			}
		}
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		list := m.Content[i+1]
		if list.Kind != yaml.SequenceNode {
			continue
		}
		for _, r := range list.Content {
			if err := unknown(r, replyFields, "reply"); err != nil {
				return err
			}
			if r.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(r.Content); j += 2 {
				v := r.Content[j+1]
				switch r.Content[j].Value {
				case "usage":
					if err := unknown(v, usageFields, "usage"); err != nil {
						return err
					}
				case "tool_calls":
					if v.Kind != yaml.SequenceNode {
						continue
					}
					for _, c := range v.Content {
						if err := unknown(c, callFields, "tool call"); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

// Load reads and parses the script file at path.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // names the path and why
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Validate checks the replies: known finish reasons, named tool calls, no
// hang combined with an error.
func (s *Script) Validate() error {
	keys := make([]string, 0, len(s.Replies))
	for k := range s.Replies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for i, r := range s.Replies[k] {
			where := fmt.Sprintf("model[%q][%d]", k, i)
			switch r.Finish {
			case "", model.FinishStop, model.FinishToolCalls, model.FinishLength, model.FinishContentFilter:
			default:
				return fmt.Errorf("%s: unknown finish %q (want stop, tool-calls, length or content-filter)", where, r.Finish)
			}
			if r.Hang && r.Error != "" {
				return fmt.Errorf("%s: hang and error are exclusive", where)
			}
			if r.ErrorAfterChunks && r.Error == "" {
				return fmt.Errorf("%s: error_after_chunks without error", where)
			}
			if r.ContextLengthExceeded && r.Error == "" {
				return fmt.Errorf("%s: context_length_exceeded without error", where)
			}
			if r.StreamBroken && r.Error == "" {
				return fmt.Errorf("%s: stream_broken without error", where)
			}
			if r.StreamBroken && r.ContextLengthExceeded {
				return fmt.Errorf("%s: stream_broken and context_length_exceeded are exclusive", where)
			}
			if u := r.Usage; u != nil && (u.Input < 0 || u.Output < 0 || u.Cached < 0 || u.Reasoning < 0) {
				return fmt.Errorf("%s: negative usage", where)
			}
			if u := r.Usage; u != nil && (u.Cached > u.Input || u.Reasoning > u.Output) {
				return fmt.Errorf("%s: usage: cached must not exceed input, nor reasoning output", where)
			}
			for j, c := range r.ToolCalls {
				if c.Name == "" {
					return fmt.Errorf("%s.tool_calls[%d]: missing name", where, j)
				}
			}
		}
	}
	return nil
}

// Keys returns the script keys in byte order.
func (s *Script) Keys() []string {
	keys := make([]string, 0, len(s.Replies))
	for k := range s.Replies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ScriptError reports a request the script cannot answer.
type ScriptError struct {
	Key   string
	Index int
	// Have is the number of replies scripted for Key (-1: key absent).
	Have int
}

func (e *ScriptError) Error() string {
	if e.Have < 0 {
		return fmt.Sprintf("scripted model: no replies for script key %q (call index %d) and no %q fallback", e.Key, e.Index, FallbackKey)
	}
	return fmt.Sprintf("scripted model: script key %q has no reply at call index %d (it has %d)", e.Key, e.Index, e.Have)
}

// Code returns CodeScriptMismatch.
func (e *ScriptError) Code() string { return CodeScriptMismatch }

// ReplyError is the failure a scripted error entry produces.
type ReplyError struct {
	Message string
	// ContextLength marks a context_length_exceeded refusal.
	ContextLength bool
	// StreamBroken marks a stream that stalled or was cut.
	StreamBroken bool
}

func (e *ReplyError) Error() string { return e.Message }

// Unwrap returns model.ErrContextLength for a context-length refusal and
// model.ErrStreamBroken for a broken stream.
func (e *ReplyError) Unwrap() error {
	switch {
	case e.ContextLength:
		return model.ErrContextLength
	case e.StreamBroken:
		return model.ErrStreamBroken
	}
	return nil
}

// Code returns CodeScripted.
func (e *ReplyError) Code() string { return CodeScripted }

func replyError(r Reply) *ReplyError {
	return &ReplyError{Message: r.Error, ContextLength: r.ContextLengthExceeded, StreamBroken: r.StreamBroken}
}

// Model replays a Script.
type Model struct{ script *Script }

var (
	_ model.Model          = (*Model)(nil)
	_ model.ThinkingSwitch = (*Model)(nil)
)

// SwitchesThinking implements model.ThinkingSwitch: a script that has
// reasoning in some reply thinks, and a request with NoThinking gets its
// reply without the reasoning (what a model with thinking off does), so
// tests see the switch in the answer.
func (m *Model) SwitchesThinking() bool {
	if m.script == nil {
		return false
	}
	for _, replies := range m.script.Replies {
		for _, r := range replies {
			if r.Reasoning != "" {
				return true
			}
		}
	}
	return false
}

// New returns a model replaying script.
func New(script *Script) model.Model { return &Model{script: script} }

// Reply returns the reply for caller, or a *ScriptError.
func (s *Script) Reply(c model.Caller) (Reply, error) {
	key := c.ScriptKey
	replies, ok := s.Replies[key]
	if !ok {
		replies, ok = s.Replies[FallbackKey]
		if !ok {
			return Reply{}, &ScriptError{Key: key, Index: c.Call, Have: -1}
		}
		key = FallbackKey
	}
	if c.Call < 0 || c.Call >= len(replies) {
		return Reply{}, &ScriptError{Key: key, Index: c.Call, Have: len(replies)}
	}
	return replies[c.Call], nil
}

// Stream replays the reply for req.Caller.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		if m.script == nil {
			yield(session.Chunk{}, &ScriptError{Key: req.Caller.ScriptKey, Index: req.Caller.Call, Have: -1})
			return
		}
		r, err := m.script.Reply(req.Caller)
		if err != nil {
			yield(session.Chunk{}, err)
			return
		}
		if r.Error != "" && !r.ErrorAfterChunks {
			yield(session.Chunk{}, replyError(r))
			return
		}
		for _, c := range Chunks(r) {
			if c.Type == session.ChunkToolCall && c.ID == "" {
				c.ID = fmt.Sprintf("call_%d_%d", req.Caller.Call+1, c.Index+1)
			}
			if ctx.Err() != nil {
				yield(session.Chunk{}, fmt.Errorf("scripted model: %w", context.Cause(ctx)))
				return
			}
			if req.NoThinking && c.Type == session.ChunkReasoning {
				continue
			}
			if r.Hang && (c.Type == session.ChunkUsage || c.Type == session.ChunkFinish || c.Type == session.ChunkToolCall) {
				continue
			}
			if r.StreamBroken && (c.Type == session.ChunkUsage || c.Type == session.ChunkFinish) {
				continue // the stream broke off before the model finished
			}
			if !yield(c, nil) {
				return
			}
		}
		switch {
		case r.Error != "":
			yield(session.Chunk{}, replyError(r))
		case r.Hang:
			<-ctx.Done()
			yield(session.Chunk{}, fmt.Errorf("scripted model: %w", context.Cause(ctx)))
		}
	}
}

// Chunks renders a reply as the chunks a streaming provider would send:
// reasoning and text split after each run of spaces (so streaming is
// visible), one tool-call delta per call, usage, then finish. A tool call
// without an id gets "call_<call>_<n>" from Stream.
func Chunks(r Reply) []session.Chunk {
	var out []session.Chunk
	for _, w := range splitWords(r.Reasoning) {
		out = append(out, session.Chunk{Type: session.ChunkReasoning, Text: w})
	}
	for _, w := range splitWords(r.Text) {
		out = append(out, session.Chunk{Type: session.ChunkText, Text: w})
	}
	for i, c := range r.ToolCalls {
		out = append(out, session.Chunk{Type: session.ChunkToolCall, Index: i, ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	if r.Usage != nil {
		out = append(out, session.Chunk{Type: session.ChunkUsage, Usage: &session.Usage{
			InputTokens: r.Usage.Input, OutputTokens: r.Usage.Output,
			CacheReadTokens: r.Usage.Cached, ReasoningTokens: r.Usage.Reasoning,
		}})
	}
	finish := r.Finish
	if finish == "" {
		finish = model.FinishStop
		if len(r.ToolCalls) > 0 {
			finish = model.FinishToolCalls
		}
	}
	return append(out, session.Chunk{Type: session.ChunkFinish, Finish: finish})
}

// splitWords cuts s after each run of whitespace; the pieces concatenate
// back to s exactly.
func splitWords(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexAny(s, " \t\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n') {
			j++
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}
