package budget

// This file defines the context policy (window, threshold), the
// conservative estimate for uncounted text, and the fold of a session's
// log into its usage.

import (
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// DefaultThreshold is the fraction of the window at which compaction
// starts.
const DefaultThreshold = 0.8

// Config is the context policy of the sessions of one process.
type Config struct {
	// Window overrides the built-in table for every model
	// (--context-window, or the settings file's context.window); 0 uses
	// the table.
	Window int
	// Windows overrides Window and the table for one model each (the
	// settings file's context.windows).
	Windows map[model.Route]int
	// Threshold is the fraction of the window a request may fill before
	// the session compacts; 0 selects DefaultThreshold.
	Threshold float64
	// Prices overrides the built-in price table (the user's settings) for
	// what the session's usage is shown to cost; nil uses the table.
	Prices *Prices
}

// WindowFor returns the context window of route r: its own override, else
// the override of every model, else the table, else 0 (unknown: no
// accounting against a size).
func (c Config) WindowFor(r model.Route) int {
	if w := c.Windows[r]; w > 0 {
		return w
	}
	if c.Window > 0 {
		return c.Window
	}
	return KnownWindow(r)
}

// Limit returns how many tokens a request to r may hold before the session
// compacts, or 0 when the window is unknown.
func (c Config) Limit(r model.Route) int {
	th := c.Threshold
	if th <= 0 || th > 1 {
		th = DefaultThreshold
	}
	return int(float64(c.WindowFor(r)) * th)
}

// EstimateText estimates the tokens of s conservatively: one token per
// three bytes, where English prose and code average about four.
func EstimateText(s string) int { return (len(s) + 2) / 3 }

// perMessage is the framing overhead of one message (role, separators).
const perMessage = 4

// EstimateBlocks estimates the tokens of content blocks.
func EstimateBlocks(bs []session.Block) int {
	n := 0
	for _, b := range bs {
		n += EstimateText(b.Text) + EstimateText(b.Arguments) + EstimateText(b.Name) + EstimateText(b.URI)
		if len(b.Content) > 0 {
			n += EstimateBlocks(b.Content)
		}
	}
	return n
}

// EstimateMessages estimates the tokens of request messages.
func EstimateMessages(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		n += perMessage + EstimateBlocks(m.Content)
	}
	return n
}

// EstimateRequest estimates a whole request: system prompt, tool
// descriptions and messages.
func EstimateRequest(req model.Request) int {
	n := EstimateText(req.System) + EstimateMessages(req.Messages)
	for _, t := range req.Tools {
		n += EstimateText(t.Name) + EstimateText(t.Description) + EstimateText(string(t.Parameters))
	}
	return n
}

// Cost returns the cost in USD of one call's usage at price p.
func Cost(u session.Usage, p Price) float64 {
	cached := min(u.CacheReadTokens, u.InputTokens)
	return (float64(u.InputTokens-cached)*p.Input + float64(cached)*p.CachedInput + float64(u.OutputTokens)*p.Output) / 1e6
}

// Tally is a session's usage folded from its log: the tokens and cost
// of its responses (Usage), and what the context accounting adds.
type Tally struct {
	// Usage sums the reported usage of the responses that reported it
	// (Responses) and the cost of the priced ones.
	Usage
	// Calls counts model responses, with or without reported usage.
	Calls int
	// Used estimates the tokens in context now: the last reported usage
	// (input and output), plus an estimate of what was added since, or the
	// compacted size after a compaction.
	Used int
	// Route is the route of the last response.
	Route model.Route
	// Compactions counts completed compactions.
	Compactions int
	// Prices overrides the built-in price table (the user's settings);
	// nil uses the table alone. Set it before the first Add.
	Prices *Prices
}

// Add folds one event into t. It never decodes message content: a
// response is read for its usage and route only, and text not counted by
// the provider is estimated from the size of its record (which also counts
// the JSON around it: conservative). A session/load replay of a large log
// folds every event, so this stays cheap.
func (t *Tally) Add(ev session.Event) {
	switch ev.Type {
	case session.TypeAssistantMessage:
		var d struct {
			Message struct {
				Source session.Source `json:"source"`
			} `json:"message"`
			Usage   *session.Usage `json:"usage"`
			Retried bool           `json:"retried"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.Calls++
		t.Route = model.Route{Provider: d.Message.Source.Provider, Model: d.Message.Source.Model}
		if d.Retried && d.Usage == nil {
			return // a broken reply sent again: not in the context
		}
		if d.Usage == nil {
			t.Used += perMessage + (len(ev.Data)+2)/3
			return
		}
		u := *d.Usage
		p, ok := t.Prices.Price(t.Route)
		t.Usage.Count(u, p, ok)
		t.Used = u.InputTokens + u.OutputTokens
	case session.TypeUserMessage, session.TypeToolResult:
		if ev.SurfaceOp != nil {
			t.Used += perMessage + (len(ev.Data)+2)/3
		}
	case session.TypeCompaction:
		var d struct {
			Outcome    string `json:"outcome"`
			PostTokens int    `json:"postTokens"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || d.Outcome != session.CompactionCompleted {
			return
		}
		t.Compactions++
		t.Used = d.PostTokens
	}
}

// Fold folds a whole log.
func Fold(events []session.Event) Tally {
	var t Tally
	for _, ev := range events {
		t.Add(ev)
	}
	return t
}
