package budget

// This file is Usage: the tokens and cost of a session or of a tree, the
// one usage type every layer shares (the log fold's Tally embeds it, the
// subagent budgets sum it per route and per tree).

import (
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Usage is what one session (or a tree) spent. Cost is the sum over the
// priced responses; it covers every counted response only when none was
// unpriced (CostKnown): an unknown price never becomes a made-up cost.
type Usage struct {
	Input      int `json:"inputTokens"`
	Output     int `json:"outputTokens"`
	Cached     int `json:"cachedTokens,omitempty"`
	CacheWrite int `json:"cacheWriteTokens,omitempty"`
	Reasoning  int `json:"reasoningTokens,omitempty"`
	// Responses counts the model responses that reported usage; Unpriced
	// those whose model has no known price.
	Responses int     `json:"responses"`
	Unpriced  int     `json:"unpriced,omitempty"`
	Cost      float64 `json:"costUsd,omitempty"`
}

// Count adds one response's reported usage u, priced at p when ok.
func (x *Usage) Count(u session.Usage, p Price, ok bool) {
	x.Input += u.InputTokens
	x.Output += u.OutputTokens
	x.Cached += u.CacheReadTokens
	x.CacheWrite += u.CacheWriteTokens
	x.Reasoning += u.ReasoningTokens
	x.Responses++
	if !ok {
		x.Unpriced++
		return
	}
	x.Cost += Cost(u, p)
}

// Tokens is what a token limit counts: input (cached included) plus
// output.
func (x Usage) Tokens() int { return x.Input + x.Output }

// Priced counts the responses whose cost is in Cost.
func (x Usage) Priced() int { return x.Responses - x.Unpriced }

// CostKnown reports whether Cost covers every counted response.
func (x Usage) CostKnown() bool { return x.Responses > 0 && x.Unpriced == 0 }

// Zero reports whether nothing was counted.
func (x Usage) Zero() bool { return x.Responses == 0 }

// Add adds v to x (a roll-up).
func (x *Usage) Add(v Usage) {
	x.Input += v.Input
	x.Output += v.Output
	x.Cached += v.Cached
	x.CacheWrite += v.CacheWrite
	x.Reasoning += v.Reasoning
	x.Responses += v.Responses
	x.Unpriced += v.Unpriced
	x.Cost += v.Cost
}

// String renders x for people and models: "1200 tokens (1000 in, 200
// out, 300 cached, 50 reasoning), $0.0042"; the cost is left out when it
// is not known.
func (x Usage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tokens (%d in, %d out", x.Tokens(), x.Input, x.Output)
	if x.Cached > 0 {
		fmt.Fprintf(&b, ", %d cached", x.Cached)
	}
	if x.Reasoning > 0 {
		fmt.Fprintf(&b, ", %d reasoning", x.Reasoning)
	}
	b.WriteString(")")
	if x.CostKnown() {
		fmt.Fprintf(&b, ", %s", FormatUSD(x.Cost))
	}
	return b.String()
}

// FormatUSD renders a cost in dollars with four decimals.
func FormatUSD(c float64) string { return fmt.Sprintf("$%.4f", c) }
