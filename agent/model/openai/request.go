package openai

// This file maps a model.Request onto chat-completions request parameters.

import (
	"encoding/json"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// buildParams maps req onto the wire. provider selects two dialect choices:
//
//   - max tokens: OpenAI's own API gets max_completion_tokens (its reasoning
//     models reject max_tokens); DeepSeek and local servers get max_tokens,
//     which is what they understand.
//   - reasoning: it is never sent back, except to DeepSeek, which requires
//     the reasoning_content of every assistant message in a stretch of the
//     conversation (between two user messages) where the model called tools,
//     and ignores it elsewhere; we send it exactly there.
func buildParams(provider, modelID string, req model.Request) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{
		Model:         shared.ChatModel(modelID),
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if req.MaxTokens > 0 {
		if provider == ProviderOpenAI {
			p.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if req.NoThinking {
		// Only where "off" has a value; otherwise reasoning_effort stays
		// unset, as it always is with thinking on (the model's default).
		p.ReasoningEffort = offEffort(provider, modelID)
	}
	msgs, err := buildMessages(provider, req)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	if len(req.Tools) > 0 {
		p.Tools = make([]oai.ChatCompletionToolUnionParam, 0, len(req.Tools))
		for _, t := range req.Tools {
			fn := shared.FunctionDefinitionParam{Name: t.Name}
			if t.Description != "" {
				fn.Description = param.NewOpt(t.Description)
			}
			if len(t.Parameters) > 0 {
				// The schema goes out byte for byte (compacted), rather than
				// through FunctionParameters' map, so key order is kept and
				// the request prefix stays stable for provider-side caching.
				if !json.Valid(t.Parameters) {
					return p, fmt.Errorf("%w: tool %q has invalid JSON parameters", ErrBadRequest, t.Name)
				}
				fn.SetExtraFields(map[string]any{"parameters": t.Parameters})
			}
			p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(fn))
		}
	}
	return p, nil
}

// offEffort is the reasoning_effort that asks model id of provider to
// answer without reasoning, "" when it has none to turn off or the API
// takes no such value for it. Only OpenAI's GPT-5 family takes one:
// "minimal" for gpt-5 and its mini and nano (dated ids too), "none" from
// gpt-5.1 on; its chat, codex and pro variants, the o-series (whose
// lowest effort still reasons), DeepSeek and other compatible servers
// are left alone.
func offEffort(provider, id string) shared.ReasoningEffort {
	if provider != ProviderOpenAI {
		return ""
	}
	rest, ok := strings.CutPrefix(id, "gpt-5")
	if !ok || strings.Contains(rest, "chat") || strings.Contains(rest, "codex") || strings.Contains(rest, "pro") {
		return ""
	}
	if strings.HasPrefix(rest, ".") {
		return shared.ReasoningEffortNone
	}
	switch {
	case rest == "", rest == "-mini", rest == "-nano",
		isDated(rest), isDated(strings.TrimPrefix(rest, "-mini")), isDated(strings.TrimPrefix(rest, "-nano")):
		return shared.ReasoningEffortMinimal
	}
	return ""
}

// isDated reports whether s is a "-YYYY-MM-DD" snapshot suffix.
func isDated(s string) bool {
	if len(s) != len("-2025-08-07") || s[0] != '-' || s[5] != '-' || s[8] != '-' {
		return false
	}
	for i, c := range s {
		if i != 0 && i != 5 && i != 8 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func buildMessages(provider string, req model.Request) ([]oai.ChatCompletionMessageParamUnion, error) {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, oai.SystemMessage(req.System))
	}
	var echoReasoning []bool
	if provider == ProviderDeepSeek {
		echoReasoning = toolStretches(req.Messages)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case session.RoleUser:
			out = append(out, userMessage(m.Content))
		case session.RoleAssistant:
			msg, ok := assistantMessage(m, echoReasoning != nil && echoReasoning[i])
			if ok {
				out = append(out, msg)
			}
		case model.RoleTool:
			for _, b := range m.Content {
				if b.Type != session.BlockToolResult {
					continue
				}
				out = append(out, oai.ToolMessage(renderBlocks(b.Content, "\n"), b.ToolCallID))
			}
		default:
			return nil, fmt.Errorf("%w: message %d has unsupported role %q", ErrBadRequest, i, m.Role)
		}
	}
	return out, nil
}

// assistantMessage maps text and tool-call blocks. A message with neither
// (for example only reasoning from an interrupted step) is dropped: the
// APIs reject empty assistant messages.
func assistantMessage(m model.Message, withReasoning bool) (oai.ChatCompletionMessageParamUnion, bool) {
	var a oai.ChatCompletionAssistantMessageParam
	var text, reasoning strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case session.BlockText:
			text.WriteString(b.Text)
		case session.BlockReasoning:
			reasoning.WriteString(b.Text)
		case session.BlockToolCall:
			args := b.Arguments
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID:       b.ID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: args},
				},
			})
		}
	}
	if text.Len() == 0 && len(a.ToolCalls) == 0 {
		return oai.ChatCompletionMessageParamUnion{}, false
	}
	if text.Len() > 0 {
		a.Content.OfString = param.NewOpt(text.String())
	}
	if withReasoning && reasoning.Len() > 0 {
		a.SetExtraFields(map[string]any{"reasoning_content": reasoning.String()})
	}
	return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}, true
}

// toolStretches marks, per message, whether it lies in a stretch between
// two user messages in which some assistant message called a tool.
func toolStretches(msgs []model.Message) []bool {
	mark := make([]bool, len(msgs))
	start := 0
	flush := func(end int, tools bool) {
		for j := start; j < end; j++ {
			mark[j] = tools
		}
	}
	tools := false
	for i, m := range msgs {
		if m.Role == session.RoleUser {
			flush(i, tools)
			start, tools = i+1, false
			continue
		}
		if m.Role == session.RoleAssistant && hasToolCall(m.Content) {
			tools = true
		}
	}
	flush(len(msgs), tools)
	return mark
}

func hasToolCall(bs []session.Block) bool {
	for _, b := range bs {
		if b.Type == session.BlockToolCall {
			return true
		}
	}
	return false
}

// renderBlocks renders user-visible content as plain text: text blocks as
// they are, resource links as a "Resource: URI" line, embedded resources as
// that line followed by their text. Other block types carry nothing the
// model should see here and are skipped.
func renderBlocks(bs []session.Block, sep string) string {
	if len(bs) == 1 && bs[0].Type == session.BlockText {
		return bs[0].Text
	}
	var sb strings.Builder
	n := 0
	for _, b := range bs {
		var part string
		switch b.Type {
		case session.BlockText:
			part = b.Text
		case session.BlockResourceLink:
			part = resourceLine(b)
			if b.Text != "" {
				part += "\n" + b.Text
			}
		case session.BlockResource:
			part = resourceLine(b)
			if b.Text != "" {
				part += "\n" + b.Text
			}
		default:
			continue
		}
		if n > 0 {
			sb.WriteString(sep)
		}
		n++
		sb.WriteString(part)
	}
	return sb.String()
}

func resourceLine(b session.Block) string {
	s := "Resource: " + b.URI
	if b.MimeType != "" {
		s += " (" + b.MimeType + ")"
	}
	if b.StartLine > 0 {
		s += fmt.Sprintf(" lines %d-%d", b.StartLine, b.EndLine)
	}
	return s
}

// userMessage renders a user message: plain text, or text and image
// parts when it carries images.
func userMessage(bs []session.Block) oai.ChatCompletionMessageParamUnion {
	var images []session.Block
	for _, b := range bs {
		if b.Type == session.BlockImage {
			images = append(images, b)
		}
	}
	if len(images) == 0 {
		return oai.UserMessage(renderBlocks(bs, "\n\n"))
	}
	parts := make([]oai.ChatCompletionContentPartUnionParam, 0, 1+len(images))
	if text := renderBlocks(bs, "\n\n"); text != "" {
		parts = append(parts, oai.TextContentPart(text))
	}
	for _, im := range images {
		parts = append(parts, oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: "data:" + im.MimeType + ";base64," + im.Data}))
	}
	return oai.UserMessage(parts)
}
