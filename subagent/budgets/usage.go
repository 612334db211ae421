package budgets

// This file is usage: the tokens of one session's own model responses,
// per route, and their cost at the price table's prices (as a
// budget.Usage, the module's one usage type).

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// RouteTokens are the tokens of one route's responses.
type RouteTokens struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Input      int    `json:"input"`
	Output     int    `json:"output"`
	Cached     int    `json:"cached,omitempty"`
	CacheWrite int    `json:"cacheWrite,omitempty"`
	Reasoning  int    `json:"reasoning,omitempty"`
	Responses  int    `json:"responses"`
}

// Ledger is the tokens of a session's own responses, per route, in the
// order the routes first answered. Prices apply when it is read (Usage),
// so a price override changes every figure the same way.
type Ledger struct {
	Routes []RouteTokens `json:"routes"`
}

// Count adds one response's usage on route r.
func (l *Ledger) Count(r model.Route, u session.Usage) {
	i := slices.IndexFunc(l.Routes, func(x RouteTokens) bool { return x.Provider == r.Provider && x.Model == r.Model })
	if i < 0 {
		l.Routes = append(l.Routes, RouteTokens{Provider: r.Provider, Model: r.Model})
		i = len(l.Routes) - 1
	}
	x := &l.Routes[i]
	x.Input += u.InputTokens
	x.Output += u.OutputTokens
	x.Cached += u.CacheReadTokens
	x.CacheWrite += u.CacheWriteTokens
	x.Reasoning += u.ReasoningTokens
	x.Responses++
}

// Usage prices l with prices (nil: the built-in table). The cost of a
// route is computed from its sums, which equals the sum of its calls'
// costs whenever no call reports more cached tokens than input tokens
// (every provider's invariant).
func (l Ledger) Usage(prices *budget.Prices) budget.Usage {
	var u budget.Usage
	for _, x := range l.Routes {
		u.Input += x.Input
		u.Output += x.Output
		u.Cached += x.Cached
		u.CacheWrite += x.CacheWrite
		u.Reasoning += x.Reasoning
		u.Responses += x.Responses
		p, ok := prices.Price(model.Route{Provider: x.Provider, Model: x.Model})
		if !ok {
			u.Unpriced += x.Responses
			continue
		}
		u.Cost += budget.Cost(session.Usage{InputTokens: x.Input, OutputTokens: x.Output, CacheReadTokens: x.Cached}, p)
	}
	return u
}

// responseUsage reads the usage and route of an assistant/message event
// without decoding its content; ok is false for other events and for
// responses without usage.
func responseUsage(ev session.Event) (model.Route, session.Usage, bool) {
	if ev.Type != session.TypeAssistantMessage {
		return model.Route{}, session.Usage{}, false
	}
	var d struct {
		Message struct {
			Source session.Source `json:"source"`
		} `json:"message"`
		Usage *session.Usage `json:"usage"`
	}
	if json.Unmarshal(ev.Data, &d) != nil || d.Usage == nil {
		return model.Route{}, session.Usage{}, false
	}
	return model.Route{Provider: d.Message.Source.Provider, Model: d.Message.Source.Model}, *d.Usage, true
}

// Counter folds a session's own usage from its log incrementally: events
// before the session's seed length (a fork's inherited history, counted
// in its parent) are skipped.
type Counter struct {
	next   int
	ledger Ledger
	// Warned is set once the 80% warning was delivered (found in the log
	// as well, so a cold resume does not warn twice).
	Warned bool
}

// Fold folds events that follow the ones folded so far; seedLength is the
// session header's.
func (c *Counter) Fold(events []session.Event, seedLength int) {
	for _, ev := range events {
		c.next++
		if ev.Seq < int64(seedLength) {
			continue
		}
		if ev.Type == session.TypeUserMessage && strings.Contains(string(ev.Data), WarningMarker) {
			c.Warned = true
			continue
		}
		if r, u, ok := responseUsage(ev); ok {
			c.ledger.Count(r, u)
		}
	}
}

// Next is the index of the first event not folded yet.
func (c *Counter) Next() int { return c.next }

// Ledger returns the tokens folded so far.
func (c *Counter) Ledger() Ledger {
	return Ledger{Routes: slices.Clone(c.ledger.Routes)}
}

// Own folds the own usage of a whole log (events after seedLength).
func Own(events []session.Event, seedLength int, prices *budget.Prices) budget.Usage {
	var c Counter
	c.Fold(events, seedLength)
	return c.ledger.Usage(prices)
}
