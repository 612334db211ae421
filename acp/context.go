package acp

// This file shows context accounting and compaction to the editor:
//   - usage_update (used, size, cost) after each model response, after a
//     compaction, when a window is learned, and once at the end of a
//     session/load replay, when the model's context window is known
//     (budget tables or --context-window) or was learned from a
//     provider's refusal (session/context-window, folded from the log live
//     and on replay alike);
//   - each compaction as the convention claude-agent-acp and codex-acp use:
//     a "think" tool call titled "Compact conversation" carrying
//     _meta.contextCompaction {version, trigger, preTokens, postTokens,
//     durationMs, error}. It starts (in_progress) at the agent's transient
//     compaction notice and ends at the session/compaction event; a replay,
//     which has no notice, shows it whole where it happened.
// The tally is folded from the same events, so a replay ends with the same
// figures the live session showed last. The cost adds what the session's
// subagents spent, as its own log reports it (each foreground result's
// raw "usage", each settlement notice's childUsage: a child and its
// descendants, the latest report per child), so live and replay show the
// same figures whatever the children's timing; _meta "acp-agent/usage"
// breaks the tokens and cost down into the session's own and its
// subagents'. Prices are the configured ones (Config.Prices).

import (
	"bytes"
	"encoding/json"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// MetaContextCompaction is the _meta key of the compaction tool call.
const MetaContextCompaction = "contextCompaction"

// CompactionTitle is the title of the compaction tool call.
const CompactionTitle = "Compact conversation"

// contextState is the translator's accounting and open compactions.
type contextState struct {
	cfg   budget.Config
	tally budget.Tally
	// learned holds, per route, the last window a provider's refusal
	// stated (session/context-window), used when cfg knows none.
	learned map[model.Route]int
	// started holds the compaction ids whose tool call is open.
	started map[string]bool
	// native selects compaction_update (the client announced
	// clientCapabilities.session.compaction); raw holds those updates
	// until the emitter sends them, as raw JSON: the SDK has no type.
	native bool
	raw    []map[string]any
	// kids is what each child the log reported on spent (with its
	// descendants), by child id: the latest report wins.
	kids map[string]budget.Usage
}

// MetaUsage is the _meta key of a usage_update's breakdown:
// {"session": usage, "subagents": usage}, each in the listings' usage
// shape (inputTokens, outputTokens, ..., costUsd where known).
const MetaUsage = "acp-agent/usage"

// compactionUpdate queues one compaction_update.
func (c *contextState) compactionUpdate(id, status, summary, errText string) {
	u := map[string]any{"sessionUpdate": "compaction_update", "compactionId": id, "status": status}
	if summary != "" {
		// A list of content blocks (the schema's ContentBlock[]): a client
		// drops a plain string.
		u["summary"] = []map[string]any{{"type": "text", "text": summary}}
	}
	if errText != "" {
		u["error"] = errText
	}
	c.raw = append(c.raw, u)
}

// takeRaw returns and clears the queued raw updates.
func (c *contextState) takeRaw() []map[string]any {
	r := c.raw
	c.raw = nil
	return r
}

// size is the context window of the session's current route: the
// configured or built-in one, else one learned from a refusal; 0 unknown.
func (c *contextState) size() int {
	if w := c.cfg.WindowFor(c.tally.Route); w > 0 {
		return w
	}
	return c.learned[c.tally.Route]
}

// fold adds ev to the tally, and a learned window to learned. Messages
// are folded whether or not the window is known yet: a window learned
// later in the turn is reported against everything sent since the last
// counted response.
func (c *contextState) fold(ev session.Event) {
	switch ev.Type {
	case session.TypeAssistantMessage, session.TypeCompaction,
		session.TypeUserMessage, session.TypeToolResult:
		if c.tally.Prices == nil {
			c.tally.Prices = c.cfg.Prices
		}
		c.tally.Add(ev)
		c.childReport(ev)
	case session.TypeContextWindow:
		d, err := session.DecodeData[session.ContextWindowData](ev)
		if err != nil || d.Window <= 0 {
			return
		}
		if c.learned == nil {
			c.learned = map[model.Route]int{}
		}
		r := model.Route{Provider: d.Provider, Model: d.Model}
		c.learned[r] = d.Window
		// The window is learned from the refusal of a request to the
		// session's current route: before the first response the tally
		// has none yet.
		if c.tally.Route == (model.Route{}) {
			c.tally.Route = r
		}
	}
}

// usageUpdate returns the usage_update of the current tally, if the
// window is known.
func (c *contextState) usageUpdate() []acpsdk.SessionUpdate {
	size := c.size()
	if size <= 0 {
		return nil
	}
	u := &acpsdk.SessionUsageUpdate{Used: min(c.tally.Used, size), Size: size}
	cost, priced := c.tally.Cost, c.tally.Priced() > 0
	if len(c.kids) > 0 {
		var kids budget.Usage
		for _, k := range c.kids {
			kids.Add(k)
		}
		cost += kids.Cost
		priced = priced || kids.Priced() > 0
		u.Meta = map[string]any{MetaUsage: map[string]any{"session": shownUsage(c.tally.Usage), "subagents": shownUsage(kids)}}
	}
	if priced {
		// The priced responses' cost: a response without a known price
		// adds nothing rather than a made-up amount.
		u.Cost = &acpsdk.Cost{Amount: cost, Currency: "USD"}
	}
	return []acpsdk.SessionUpdate{{UsageUpdate: u}}
}

// childReport records what a child spent when ev reports it: a
// foreground result's raw "usage" or a settlement notice's childUsage.
// Other events are passed over by a byte check, undecoded.
func (c *contextState) childReport(ev session.Event) {
	switch ev.Type {
	case session.TypeToolResult:
		if !bytes.Contains(ev.Data, []byte(`"usage":{`)) {
			return
		}
		var d struct {
			Raw struct {
				RunID string        `json:"runId"`
				Usage *budget.Usage `json:"usage"`
			} `json:"raw"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Raw.RunID != "" && d.Raw.Usage != nil {
			c.setKid(d.Raw.RunID, *d.Raw.Usage)
		}
	case session.TypeUserMessage:
		if !bytes.Contains(ev.Data, []byte(`"childUsage"`)) {
			return
		}
		var m session.Message
		if json.Unmarshal(ev.Data, &m) != nil || m.Source.Kind != session.SourceSubagentSettled || m.Source.SenderSessionID == "" {
			return
		}
		var u budget.Usage
		if json.Unmarshal(m.ChildUsage, &u) == nil {
			c.setKid(m.Source.SenderSessionID, u)
		}
	}
}

func (c *contextState) setKid(id string, u budget.Usage) {
	if c.kids == nil {
		c.kids = map[string]budget.Usage{}
	}
	c.kids[id] = u
}

// shownUsage is u as a breakdown shows it: no cost unless every response
// of it was priced.
func shownUsage(u budget.Usage) budget.Usage {
	if !u.CostKnown() {
		u.Cost = 0
	}
	return u
}

// compactionStart opens the tool call of a compaction that has begun.
func (c *contextState) compactionStart(id string) []acpsdk.SessionUpdate {
	if id == "" || c.started[id] {
		return nil
	}
	if c.started == nil {
		c.started = map[string]bool{}
	}
	c.started[id] = true
	if c.native {
		c.compactionUpdate(id, "in_progress", "", "")
		return nil
	}
	return []acpsdk.SessionUpdate{acpsdk.StartToolCall(compactionCallID(id), CompactionTitle,
		acpsdk.WithStartKind(acpsdk.ToolKindThink),
		acpsdk.WithStartStatus(acpsdk.ToolCallStatusInProgress))}
}

func compactionCallID(id string) acpsdk.ToolCallId { return acpsdk.ToolCallId("compaction-" + id) }

// compactionMeta is _meta.contextCompaction of a compaction.
func compactionMeta(d session.CompactionData) map[string]any {
	m := map[string]any{
		"version": 1, "trigger": d.Trigger, "preTokens": d.PreTokens,
		"postTokens": d.PostTokens, "durationMs": d.DurationMs,
	}
	if d.Error != "" {
		m["error"] = d.Error
	} else {
		m["error"] = nil
	}
	return map[string]any{MetaContextCompaction: m}
}

// compactionText is what the tool call shows: the summary, or what
// happened instead.
func compactionText(d session.CompactionData) string {
	switch {
	case d.Error != "":
		return "Compaction " + d.Outcome + ": " + d.Error
	case d.Summary != "":
		return d.Summary
	default:
		return "Old tool results were replaced by short stubs."
	}
}

// compaction closes (or, in a replay, shows whole) the tool call of a
// recorded compaction, followed by the new usage.
func (c *contextState) compaction(ev session.Event) []acpsdk.SessionUpdate {
	var d session.CompactionData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return nil
	}
	if c.native {
		if !c.started[d.ID] {
			c.compactionUpdate(d.ID, "in_progress", "", "")
		}
		delete(c.started, d.ID)
		c.compactionUpdate(d.ID, d.Outcome, d.Summary, d.Error)
		return nil
	}
	status := acpsdk.ToolCallStatusCompleted
	if d.Outcome != session.CompactionCompleted {
		status = acpsdk.ToolCallStatusFailed
	}
	var out []acpsdk.SessionUpdate
	if !c.started[d.ID] {
		out = append(out, acpsdk.StartToolCall(compactionCallID(d.ID), CompactionTitle,
			acpsdk.WithStartKind(acpsdk.ToolKindThink),
			acpsdk.WithStartStatus(acpsdk.ToolCallStatusInProgress)))
	}
	delete(c.started, d.ID)
	u := acpsdk.UpdateToolCall(compactionCallID(d.ID),
		acpsdk.WithUpdateStatus(status),
		acpsdk.WithUpdateContent(textContent(compactionText(d))))
	u.ToolCallUpdate.Meta = compactionMeta(d)
	return append(out, u)
}

// notice translates a transient model notice: a compaction start opens
// its tool call, anything else is a marked thought line (notice.go).
func (t *translator) notice(n model.Notice) []acpsdk.SessionUpdate {
	if n.Kind == agent.NoticeCompaction {
		return t.ctx.compactionStart(n.Message)
	}
	return noticeUpdate(n)
}
