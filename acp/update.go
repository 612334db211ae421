package acp

// This file defines the translator: the one mapping from the session log
// (and transient tool progress) to ACP session/update payloads. Live
// streaming and session/load replay both fold events through it, so a
// replayed conversation shows exactly what was streamed.

import (
	"encoding/json"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// MetaSubagent is the _meta key under which the subagent tools describe the
// child behind a tool call: {childSessionId, mode, depth}.
const MetaSubagent = delegation.MetaKey

// Titler is an optional tool interface: a short, human title for one call
// of the tool, shown by editors on the tool_call. Tools without it are
// titled by name.
type Titler interface {
	Title(arguments json.RawMessage) string
}

// ToolLookup finds a tool by name; the translator asks it for the tool's
// kind (tool.Kind) and title (Titler). It may be nil.
type ToolLookup func(name string) (tool.Tool, bool)

// translator folds a session's events into session/update payloads. It is
// deterministic: the same events (and progress reports) in the same order
// give the same updates. It is not safe for concurrent use; each session's
// emitter owns one.
type translator struct {
	tools ToolLookup
	// session is the id of the session translated ("" unknown: no
	// message ids), see message_id.go.
	session string
	// cwd resolves relative tool locations; "" leaves them as given.
	cwd string

	// next is the seq of the next event to translate; events below it were
	// already translated (replay and live subscription overlap).
	next int64
	// open lists the tool calls started and not yet closed, in start order.
	open []string
	// chunked records the (turn, step) pairs whose text was streamed as
	// assistant/chunk events, so their assistant/message is not shown twice.
	chunked map[[2]int]bool
	// names maps open call ids to tool names; depth is the session's
	// delegation depth (see subagent_link.go).
	names map[string]string
	depth int
	// planCalls holds the open todo calls (plan.go).
	planCalls map[string]bool
	// models renders session/model events (config_options.go);
	// configModes also offers the mode as a config option (a top-level
	// session). model and mode are the choices folded so far ("" is the
	// default), seeded from the log when a session binds without a replay.
	models      modelList
	configModes bool
	model, mode string
	// sandbox is the sandbox option's value folded so far; nil when the
	// option is not offered (config_boolean.go).
	sandbox *bool
	// thinking is the thinking option's value folded so far; nil when
	// the option is not offered (config_thinking.go).
	thinking *bool
	// ctx is the context accounting and open compactions (context.go).
	ctx contextState
	// delegations maps a child session id to the tool call that started it
	// (its settlement notice updates that call with the final digest).
	delegations map[string]string
	// shapes holds the kind and title of each open call; bg the
	// background delegations' calls past their result; early the final
	// digests that reached a call before its result; recap the notice of
	// the last settlement translated (background_call.go).
	shapes map[string]callShape
	bg     map[string]*bgCall
	early  map[string]earlyFinal
	recap  []acpsdk.SessionUpdate
}

func newTranslator(tools ToolLookup) *translator {
	return &translator{tools: tools, chunked: map[[2]int]bool{}}
}

// fresh returns a new translator with t's configuration and no state.
func (t *translator) fresh() *translator {
	n := newTranslator(t.tools).withDepth(t.depth).withSession(t.session)
	n.cwd = t.cwd
	n.models, n.configModes = t.models, t.configModes
	n.sandbox, n.thinking = t.sandbox, t.thinking
	n.ctx.cfg, n.ctx.native = t.ctx.cfg, t.ctx.native
	return n
}

// event translates one log event. replay selects the session/load view,
// which also shows the user's own messages (a live client already has
// them). Events below t.next are skipped.
//
// It is long because it is the one table from log event types to wire
// updates that live streaming and replay share: each case is a few lines,
// and cutting the switch apart would scatter that table.
func (t *translator) event(ev session.Event, replay bool) []acpsdk.SessionUpdate {
	if ev.Seq < t.next {
		return nil
	}
	t.next = ev.Seq + 1
	t.ctx.fold(ev)
	switch ev.Type {
	case session.TypeCompaction:
		return append(t.ctx.compaction(ev), t.liveUsage(replay)...)

	case session.TypeUserMessage:
		msg, err := session.DecodeData[session.Message](ev)
		if err != nil {
			return nil
		}
		if msg.Source.Kind == session.SourceSubagentSettled {
			return t.settledDigest(msg)
		}
		if !replay || msg.Source.Kind != session.SourceUser {
			return nil
		}
		var out []acpsdk.SessionUpdate
		for _, b := range msg.Content {
			if cb, ok := contentBlock(b); ok {
				u := acpsdk.UpdateUserMessage(cb)
				if t.session != "" && msg.ID != "" {
					u.UserMessageChunk.MessageId = acpsdk.Ptr(userMessageID(t.session, msg.ID))
				}
				out = append(out, u)
			}
		}
		return out

	case session.TypeAssistantChunk:
		d, err := session.DecodeData[session.AssistantChunkData](ev)
		if err != nil {
			return nil
		}
		switch d.Chunk.Type {
		case session.ChunkText:
			t.chunked[[2]int{d.Turn, d.Step}] = true
			if d.Chunk.Text != "" {
				return []acpsdk.SessionUpdate{t.agentText(d.Chunk.Text, d.Turn, d.Step)}
			}
		case session.ChunkReasoning:
			t.chunked[[2]int{d.Turn, d.Step}] = true
			if d.Chunk.Text != "" {
				return []acpsdk.SessionUpdate{acpsdk.UpdateAgentThoughtText(d.Chunk.Text)}
			}
		}
		return nil

	case session.TypeAssistantMessage:
		// Normally already streamed chunk by chunk; shown whole only when
		// the log holds no chunks for its step (non-streaming producers).
		// Its position is read first: a large replay skips decoding the
		// text of every streamed message.
		var at session.StepData
		if err := json.Unmarshal(ev.Data, &at); err != nil {
			return nil
		}
		if t.chunked[[2]int{at.Turn, at.Step}] {
			return t.liveUsage(replay)
		}
		d, err := session.DecodeData[session.AssistantMessageData](ev)
		if err != nil {
			return nil
		}
		var out []acpsdk.SessionUpdate
		for _, b := range d.Message.Content {
			switch b.Type {
			case session.BlockText:
				if b.Text != "" {
					out = append(out, t.agentText(b.Text, at.Turn, at.Step))
				}
			case session.BlockReasoning:
				if b.Text != "" {
					out = append(out, acpsdk.UpdateAgentThoughtText(b.Text))
				}
			}
		}
		return append(out, t.liveUsage(replay)...)

	case session.TypeToolCall:
		d, err := session.DecodeData[session.ToolCallData](ev)
		if err != nil || d.CallID == "" {
			return nil
		}
		t.open = append(t.open, d.CallID)
		t.noteCall(d.CallID, d.Name)
		t.notePlanCall(d)
		kind, title := t.describe(d.Name, json.RawMessage(d.Arguments))
		t.noteShape(d.CallID, d.Name, kind, title)
		u := acpsdk.StartToolCall(acpsdk.ToolCallId(d.CallID), title,
			acpsdk.WithStartKind(kind),
			acpsdk.WithStartStatus(acpsdk.ToolCallStatusInProgress),
			acpsdk.WithStartRawInput(rawArguments(d.Arguments)))
		u.ToolCall.Locations = t.startLocations(d.Name, json.RawMessage(d.Arguments))
		return []acpsdk.SessionUpdate{u}

	case session.TypeToolResult:
		d, err := session.DecodeData[session.ToolResultData](ev)
		if err != nil {
			return nil
		}
		return append(t.toolResult(d), t.planUpdate(d)...)

	case session.TypeSessionTitle:
		d, err := session.DecodeData[session.TitleData](ev)
		if err != nil || d.Title == "" {
			return nil
		}
		return []acpsdk.SessionUpdate{{SessionInfoUpdate: &acpsdk.SessionSessionInfoUpdate{
			Title:     acpsdk.Ptr(d.Title),
			UpdatedAt: acpsdk.Ptr(isoTime(ev.Time)),
		}}}

	case TypeSessionMode:
		return t.modeUpdate(ev)

	case TypeSessionModel:
		return t.modelUpdate(ev)

	case TypeSessionSandbox:
		return t.sandboxUpdate(ev)

	case TypeSessionThinking:
		return t.thinkingUpdate(ev)

	case TypeChildPermission:
		return childPermissionUpdate(ev)

	case delegation.TypeQuestionRefused:
		d, err := session.DecodeData[delegation.QuestionRefused](ev)
		if err != nil {
			return nil
		}
		return noticeUpdate(model.Notice{Kind: noticeQuestionRefused, Message: d.Message})

	case delegation.TypeWorktreeSettled:
		d, err := session.DecodeData[delegation.WorktreeSettled](ev)
		if err != nil {
			return nil
		}
		return noticeUpdate(model.Notice{Kind: noticeWorktree, Message: d.Message})

	case session.TypeContextWindow:
		// Folded above: the usage is shown against the learned size at
		// once (a refused request's estimate, until the next response).
		return t.liveUsage(replay)

	case session.TypeNotice:
		d, err := session.DecodeData[session.NoticeData](ev)
		if err != nil {
			return nil
		}
		return noticeUpdate(model.Notice{Kind: d.Kind, Message: d.Message, Attempt: d.Attempt})

	case session.TypeTurnEnd:
		clear(t.chunked)
		clear(t.names)
		return t.closeOpen()
	}
	return nil
}

// liveUsage is the usage_update sent after a live model response or
// compaction; a replay sends one at its end instead (emitter).
func (t *translator) liveUsage(replay bool) []acpsdk.SessionUpdate {
	if replay {
		return nil
	}
	return t.ctx.usageUpdate()
}

// toolResult closes a tool call with its final status, text content and
// raw output.
func (t *translator) toolResult(d session.ToolResultData) []acpsdk.SessionUpdate {
	var block session.Block
	for _, b := range d.Message.Content {
		if b.Type == session.BlockToolResult {
			block = b
			break
		}
	}
	if block.ToolCallID == "" {
		return nil
	}
	failed := block.IsError || d.Error != nil
	status := acpsdk.ToolCallStatusCompleted
	if failed {
		status = acpsdk.ToolCallStatusFailed
	}
	text := session.JoinText(block.Content, "\n")
	var raw any = d.Raw
	if raw == nil {
		if d.Error != nil {
			raw = map[string]any{"error": d.Error}
		} else {
			raw = text
		}
	}
	u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(block.ToolCallID),
		acpsdk.WithUpdateStatus(status),
		acpsdk.WithUpdateContent(textContent(text)),
		acpsdk.WithUpdateRawOutput(raw))
	t.applyDisplay(&u, d.Display)
	shape := t.shapes[block.ToolCallID]
	delete(t.shapes, block.ToolCallID)
	t.forget(block.ToolCallID)
	m := t.resultMeta(block.ToolCallID, d)
	if m == nil {
		delete(t.early, block.ToolCallID)
		return []acpsdk.SessionUpdate{u}
	}
	u.ToolCallUpdate.Meta = m
	var out []acpsdk.SessionUpdate
	if child := backgroundChild(m, failed); child != "" {
		out = t.keepOpen(block.ToolCallID, child, shape, u, text)
	} else {
		delete(t.early, block.ToolCallID)
		out = []acpsdk.SessionUpdate{u}
	}
	t.noteDelegation(block.ToolCallID, m)
	return out
}

// progress translates a transient progress report of a running tool: the
// progress line replaces the call's content, and its Meta becomes the
// update's _meta. Progress is not logged, so a replay does not show it;
// tools that want a lasting link (a child session id) also record it in
// their result's display meta (see resultMeta).
func (t *translator) progress(p agent.ToolProgress) []acpsdk.SessionUpdate {
	if p.CallID == "" {
		return nil
	}
	if c := t.bg[p.CallID]; c != nil {
		return t.bgProgress(c, p)
	}
	status := acpsdk.ToolCallStatusInProgress
	if p.Status != "" {
		status = acpsdk.ToolCallStatus(p.Status)
	}
	shape, open := t.shapes[p.CallID]
	if open && shape.delegation && (status == acpsdk.ToolCallStatusCompleted || status == acpsdk.ToolCallStatusFailed) {
		// A final digest before the call's result (the child settled
		// before its delegation returned): the result closes the call
		// with it, so the call never goes back to in_progress.
		if t.early == nil {
			t.early = map[string]earlyFinal{}
		}
		t.early[p.CallID] = earlyFinal{status: status, text: p.Text}
		return nil
	}
	u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(p.CallID),
		acpsdk.WithUpdateStatus(status),
		acpsdk.WithUpdateContent(textContent(p.Text)))
	if p.Display != nil && p.Text == "" {
		u.ToolCallUpdate.Content = nil
	}
	if len(p.Meta) > 0 {
		u.ToolCallUpdate.Meta = p.Meta
	}
	t.applyDisplay(&u, p.Display)
	if shape.delegation {
		withShape(&u, shape)
	}
	return []acpsdk.SessionUpdate{u}
}

// closeOpen closes every open tool call as failed: its turn ended (aborted,
// failed, or the process died) without a result for it.
func (t *translator) closeOpen() []acpsdk.SessionUpdate {
	if len(t.open) == 0 {
		return nil
	}
	out := make([]acpsdk.SessionUpdate, 0, len(t.open))
	for _, id := range t.open {
		delete(t.shapes, id)
		delete(t.early, id)
		u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(id),
			acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusFailed),
			acpsdk.WithUpdateContent(textContent("tool call did not complete: the turn ended first")))
		out = append(out, u)
	}
	t.open = t.open[:0]
	return out
}

func (t *translator) forget(id string) {
	for i, x := range t.open {
		if x == id {
			t.open = append(t.open[:i], t.open[i+1:]...)
			break
		}
	}
}

// describe returns the ACP kind and title of a call to the named tool;
// the title is escaped (control and bidi characters made visible), so it
// reads as what the call contains.
func (t *translator) describe(name string, args json.RawMessage) (acpsdk.ToolKind, string) {
	kind, title := t.describeRaw(name, args)
	return kind, workspace.EscapeTitle(title)
}

func (t *translator) describeRaw(name string, args json.RawMessage) (acpsdk.ToolKind, string) {
	kind, title := acpsdk.ToolKindOther, name
	// Delegation tools are shown with kind "think" even when the tool
	// itself is not registered in this process (replaying an old log).
	if delegation.IsStart(name) {
		kind = acpsdk.ToolKindThink
		title = subagentTitle(args)
	}
	if t.tools == nil {
		return kind, title
	}
	tl, ok := t.tools(name)
	if !ok {
		return kind, title
	}
	if k, ok := tl.(tool.Kind); ok && k.Kind() != "" {
		kind = acpsdk.ToolKind(k.Kind())
	}
	if ti, ok := tl.(Titler); ok {
		if s := ti.Title(args); s != "" {
			return kind, s
		}
	}
	return kind, locatedTitle(tl, title, args)
}

// subagentTitle titles a delegation by its description when the
// delegation tool supplies no title of its own. The task comes first:
// editors that shorten a title keep its start (CodeCompanion keeps only the
// part before a colon, so "Subagent: Find the bug" showed as "Subagent").
func subagentTitle(args json.RawMessage) string {
	var p struct {
		Description string `json:"description"`
	}
	if json.Unmarshal(args, &p) == nil && strings.TrimSpace(p.Description) != "" {
		return strings.TrimSpace(p.Description) + " (subagent)"
	}
	return "Subagent"
}

// rawArguments returns the parsed call arguments, or the raw string when
// they are not valid JSON (the model may produce anything).
func rawArguments(s string) any {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

func textContent(text string) []acpsdk.ToolCallContent {
	return []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(text))}
}

// isoTime renders epoch milliseconds as ISO 8601 (UTC, millisecond
// precision), the form ACP uses for updatedAt.
func isoTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// agentText is an agent_message_chunk of the model's reply of (turn, step),
// with that reply's messageId.
func (t *translator) agentText(text string, turn, step int) acpsdk.SessionUpdate {
	u := acpsdk.UpdateAgentMessageText(text)
	if t.session != "" {
		u.AgentMessageChunk.MessageId = acpsdk.Ptr(assistantMessageID(t.session, turn, step))
	}
	return u
}
