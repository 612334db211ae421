package anthropic

// This file maps a model.Request onto Messages API parameters.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// ErrBadRequest marks a model.Request that cannot be mapped to the wire
// (unknown role, invalid tool schema). It is returned wrapped.
var ErrBadRequest = errors.New("anthropic: bad model request")

// buildParams maps req onto the wire. Order and bytes depend on req only,
// so the same history serializes the same way on every turn.
func buildParams(cfg Config, modelID string, req model.Request) (sdk.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = cfg.MaxTokens
	}
	p := sdk.MessageNewParams{
		Model:     sdk.Model(modelID),
		MaxTokens: int64(maxTokens),
		// The request-level breakpoint: the API puts it on the last
		// cacheable block, the newest message, so the whole conversation
		// so far is cached for the next turn without a marker that would
		// move inside the messages.
		CacheControl: sdk.NewCacheControlEphemeralParam(),
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	if cfg.ThinkingBudget > 0 && cfg.ThinkingBudget < maxTokens && !req.NoThinking && !unthoughtToolStep(req.Messages) {
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(cfg.ThinkingBudget))
	}
	for _, t := range req.Tools {
		raw := t.Parameters
		if len(raw) == 0 {
			raw = json.RawMessage(`{"type":"object"}`)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return p, fmt.Errorf("%w: tool %q has invalid JSON parameters", ErrBadRequest, t.Name)
		}
		// The schema goes out byte for byte (compacted) as the one extra
		// field input_schema: decoded into the SDK's schema type, keys
		// beyond properties/required would be re-added in map order,
		// which changes from request to request and breaks the cache.
		u := sdk.ToolUnionParamOfTool(sdk.ToolInputSchemaParam{}, t.Name)
		u.OfTool.SetExtraFields(map[string]any{"input_schema": json.RawMessage(compact.Bytes())})
		if t.Description != "" {
			u.OfTool.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, u)
	}
	msgs, err := buildMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	return p, nil
}

// unthoughtToolStep reports whether the request continues a tool use whose
// assistant message did not start with thinking (thinking was off, or
// another provider answered). With thinking on, the API refuses such a
// request (the last assistant message before the tool results must start
// with a thinking block), so thinking stays off until the next user
// message: a session that turns thinking on mid-turn gets it from its
// next turn.
func unthoughtToolStep(history []model.Message) bool {
	if len(history) == 0 || history[len(history)-1].Role != model.RoleTool {
		return false
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role != session.RoleAssistant {
			continue
		}
		for _, b := range history[i].Content {
			if b.Type == session.BlockReasoning && (b.Data != "" || b.Signature != "") {
				return false // sent as its first block
			}
			if b.Type != session.BlockReasoning {
				return true
			}
		}
		return true
	}
	return false
}

// buildMessages maps the history. Tool results become tool_result blocks
// of a user message; consecutive messages of one role are merged (the
// API wants results right after the tool use, in one user turn); an
// assistant message left with no block (only unsigned reasoning from
// another provider) is dropped.
func buildMessages(history []model.Message) ([]sdk.MessageParam, error) {
	type turn struct {
		user   bool
		blocks []sdk.ContentBlockParamUnion
	}
	var turns []turn
	add := func(user bool, blocks []sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].user == user {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{user: user, blocks: blocks})
	}
	for i, m := range history {
		switch m.Role {
		case session.RoleUser:
			add(true, userBlocks(m.Content))
		case session.RoleAssistant:
			add(false, assistantBlocks(m.Content))
		case model.RoleTool:
			var out []sdk.ContentBlockParamUnion
			for _, b := range m.Content {
				if b.Type == session.BlockToolResult {
					out = append(out, sdk.NewToolResultBlock(b.ToolCallID, renderBlocks(b.Content, "\n"), b.IsError))
				}
			}
			add(true, out)
		default:
			return nil, fmt.Errorf("%w: message %d has unsupported role %q", ErrBadRequest, i, m.Role)
		}
	}
	out := make([]sdk.MessageParam, len(turns))
	for i, t := range turns {
		if t.user {
			out[i] = sdk.NewUserMessage(t.blocks...)
		} else {
			out[i] = sdk.NewAssistantMessage(t.blocks...)
		}
	}
	return out, nil
}

// userBlocks renders a user message: its text content as one text block,
// then its images.
func userBlocks(bs []session.Block) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	if text := renderBlocks(bs, "\n\n"); text != "" {
		out = append(out, sdk.NewTextBlock(text))
	}
	for _, b := range bs {
		if b.Type == session.BlockImage && b.Data != "" {
			out = append(out, sdk.NewImageBlockBase64(b.MimeType, b.Data))
		}
	}
	return out
}

// assistantBlocks maps thinking (with its signature; redacted thinking as
// is), text and tool use, in the order they were produced. Reasoning
// without a signature came from another provider and cannot be verified,
// so it is not sent.
func assistantBlocks(bs []session.Block) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, b := range bs {
		switch b.Type {
		case session.BlockReasoning:
			switch {
			case b.Data != "":
				out = append(out, sdk.NewRedactedThinkingBlock(b.Data))
			case b.Signature != "":
				out = append(out, sdk.NewThinkingBlock(b.Signature, b.Text))
			}
		case session.BlockText:
			if b.Text != "" {
				out = append(out, sdk.NewTextBlock(b.Text))
			}
		case session.BlockToolCall:
			args := json.RawMessage(b.Arguments)
			if len(strings.TrimSpace(b.Arguments)) == 0 || !json.Valid(args) {
				// A cut-off call still needs an object as input; its
				// result already says it did not run.
				args = json.RawMessage(`{}`)
			}
			out = append(out, sdk.NewToolUseBlock(b.ID, args, b.Name))
		}
	}
	return out
}

// renderBlocks renders user-visible content as text: text as is, resource
// links and embedded resources as a "Resource: URI" line followed by
// their text (a linked file's numbered lines, a selection).
func renderBlocks(bs []session.Block, sep string) string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case session.BlockText:
			parts = append(parts, b.Text)
		case session.BlockResourceLink, session.BlockResource:
			line := "Resource: " + b.URI
			if b.MimeType != "" {
				line += " (" + b.MimeType + ")"
			}
			if b.StartLine > 0 {
				line += fmt.Sprintf(" lines %d-%d", b.StartLine, b.EndLine)
			}
			if b.Text != "" {
				line += "\n" + b.Text
			}
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, sep)
}
