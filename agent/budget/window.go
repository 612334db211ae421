package budget

// This file holds the built-in tables of known models: context window and
// list price. Ids are matched by the longest known prefix, so dated
// snapshots ("gpt-4.1-2025-04-14") find their family.

import (
	"fmt"
	"math"
	"strings"

	"github.com/acp-agent/acp-agent/agent/model"
)

// Price is a model's list price in USD per million tokens.
type Price struct {
	Input, CachedInput, Output float64
}

type known struct {
	prefix string
	window int
	price  *Price
}

// models are the known model families, by provider. Prices are the
// providers' published list prices when this table was written; a model
// without a price gets no cost.
var models = map[string][]known{
	// Anthropic's published list prices; CachedInput is the price of a
	// cache hit. Every current Claude model has a 200k window by default
	// (a larger one only behind a beta header).
	"anthropic": {
		{"claude-opus-4-5", 200_000, &Price{Input: 5, CachedInput: 0.50, Output: 25}},
		{"claude-opus-4-1", 200_000, &Price{Input: 15, CachedInput: 1.50, Output: 75}},
		{"claude-opus-4", 200_000, &Price{Input: 15, CachedInput: 1.50, Output: 75}},
		{"claude-sonnet-4", 200_000, &Price{Input: 3, CachedInput: 0.30, Output: 15}},
		{"claude-3-7-sonnet", 200_000, &Price{Input: 3, CachedInput: 0.30, Output: 15}},
		{"claude-3-5-sonnet", 200_000, &Price{Input: 3, CachedInput: 0.30, Output: 15}},
		{"claude-haiku-4-5", 200_000, &Price{Input: 1, CachedInput: 0.10, Output: 5}},
		{"claude-3-5-haiku", 200_000, &Price{Input: 0.80, CachedInput: 0.08, Output: 4}},
		{"claude-3-haiku", 200_000, &Price{Input: 0.25, CachedInput: 0.03, Output: 1.25}},
		{"claude-3-opus", 200_000, &Price{Input: 15, CachedInput: 1.50, Output: 75}},
	},
	"deepseek": {
		{"deepseek-chat", 128_000, &Price{Input: 0.28, CachedInput: 0.028, Output: 0.42}},
		{"deepseek-reasoner", 128_000, &Price{Input: 0.28, CachedInput: 0.028, Output: 0.42}},
	},
	"openai": {
		{"gpt-4.1-nano", 1_047_576, &Price{Input: 0.10, CachedInput: 0.025, Output: 0.40}},
		{"gpt-4.1-mini", 1_047_576, &Price{Input: 0.40, CachedInput: 0.10, Output: 1.60}},
		{"gpt-4.1", 1_047_576, &Price{Input: 2.00, CachedInput: 0.50, Output: 8.00}},
		{"gpt-4o-mini", 128_000, &Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}},
		{"gpt-4o", 128_000, &Price{Input: 2.50, CachedInput: 1.25, Output: 10.00}},
		{"gpt-4-turbo", 128_000, nil},
		{"gpt-4", 8_192, nil},
		{"gpt-3.5-turbo", 16_385, nil},
		{"gpt-5-nano", 400_000, &Price{Input: 0.05, CachedInput: 0.005, Output: 0.40}},
		{"gpt-5-mini", 400_000, &Price{Input: 0.25, CachedInput: 0.025, Output: 2.00}},
		{"gpt-5", 400_000, &Price{Input: 1.25, CachedInput: 0.125, Output: 10.00}},
		{"o4-mini", 200_000, &Price{Input: 1.10, CachedInput: 0.275, Output: 4.40}},
		{"o3-mini", 200_000, &Price{Input: 1.10, CachedInput: 0.55, Output: 4.40}},
		{"o3", 200_000, &Price{Input: 2.00, CachedInput: 0.50, Output: 8.00}},
		{"o1", 200_000, nil},
	},
}

func lookup(r model.Route) (known, bool) {
	fams := models[r.Provider]
	if r.Provider == "" || r.Provider == "openai-compatible" {
		// Unknown providers may still serve a well-known model id.
		fams = append(append([]known(nil), models["openai"]...), models["deepseek"]...)
	}
	best, ok := known{}, false
	for _, k := range fams {
		if strings.HasPrefix(r.Model, k.prefix) && len(k.prefix) > len(best.prefix) {
			best, ok = k, true
		}
	}
	return best, ok
}

// KnownWindow returns the context window of a known model, or 0.
func KnownWindow(r model.Route) int {
	k, _ := lookup(r)
	return k.window
}

// KnownPrice returns the list price of a known model.
func KnownPrice(r model.Route) (Price, bool) {
	k, ok := lookup(r)
	if !ok || k.price == nil || r.Provider == "openai-compatible" {
		// A compatible server's prices are its own.
		return Price{}, false
	}
	return *k.price, true
}

// Prices are price overrides (the user settings' prices): keys are
// "provider/model" or a bare model id, each matched as a prefix of the
// route's model id, the longest match winning; a provider-qualified key
// beats a bare one of the same length. The key "*" prices every model
// no other key (nor the built-in table) prices, as a local or scripted
// model. A nil *Prices has no overrides.
type Prices struct {
	byKey map[string]Price
}

// NewPrices validates overrides: every price finite and not negative.
func NewPrices(overrides map[string]Price) (*Prices, error) {
	if len(overrides) == 0 {
		return nil, nil
	}
	p := &Prices{byKey: make(map[string]Price, len(overrides))}
	for k, v := range overrides {
		if strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("price override with an empty model id")
		}
		for _, f := range []float64{v.Input, v.CachedInput, v.Output} {
			if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("price override %q: prices must be finite and not negative", k)
			}
		}
		p.byKey[k] = v
	}
	return p, nil
}

// Price returns the price of route r: an override, else the built-in
// list price; not ok when neither knows it (no cost is made up).
func (p *Prices) Price(r model.Route) (Price, bool) {
	if p != nil {
		best, bestLen, found := Price{}, -1, false
		for k, v := range p.byKey {
			if k == "*" {
				continue
			}
			id, qualified := k, false
			if prov, m, ok := strings.Cut(k, "/"); ok && prov == r.Provider {
				id, qualified = m, true
			} else if ok {
				continue
			}
			if !strings.HasPrefix(r.Model, id) {
				continue
			}
			n := 2 * len(id)
			if qualified {
				n++
			}
			if n > bestLen {
				best, bestLen, found = v, n, true
			}
		}
		if found {
			return best, true
		}
	}
	if pr, ok := KnownPrice(r); ok {
		return pr, true
	}
	if p != nil {
		if pr, ok := p.byKey["*"]; ok {
			return pr, true
		}
	}
	return Price{}, false
}
