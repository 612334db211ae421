package budgets_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

func TestNarrow(t *testing.T) {
	def := budgets.Limits{MaxTokens: 1000, MaxCostUSD: 1, MaxTurns: 10, Timeout: time.Minute}
	tests := []struct {
		name  string
		base  budgets.Limits
		asked budgets.Limits
		want  budgets.Limits
		widen string
	}{
		{name: "nothing asked keeps the definition", base: def, want: def},
		{name: "each field narrows", base: def,
			asked: budgets.Limits{MaxTokens: 500, MaxCostUSD: 0.5, MaxTurns: 3, Timeout: time.Second},
			want:  budgets.Limits{MaxTokens: 500, MaxCostUSD: 0.5, MaxTurns: 3, Timeout: time.Second}},
		{name: "an open field may be set", base: budgets.Limits{}, asked: budgets.Limits{MaxTokens: 7}, want: budgets.Limits{MaxTokens: 7}},
		{name: "equal is not wider", base: def, asked: budgets.Limits{MaxTokens: 1000}, want: def},
		{name: "tokens widen", base: def, asked: budgets.Limits{MaxTokens: 1001}, widen: "maxTokens"},
		{name: "cost widens", base: def, asked: budgets.Limits{MaxCostUSD: 2}, widen: "maxCostUsd"},
		{name: "turns widen", base: def, asked: budgets.Limits{MaxTurns: 11}, widen: "maxTurns"},
		{name: "timeout widens", base: def, asked: budgets.Limits{Timeout: time.Hour}, widen: "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := budgets.Narrow(tt.base, tt.asked)
			if tt.widen != "" {
				var we *budgets.WidenError
				if !errors.As(err, &we) || we.Field != tt.widen {
					t.Fatalf("err %v, want a WidenError on %s", err, tt.widen)
				}
				if got != tt.base {
					t.Fatalf("a refused narrowing changed the limits: %+v", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Narrow = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := budgets.Narrow(def, budgets.Limits{MaxCostUSD: math.NaN()}); err == nil {
		t.Fatal("a NaN cost was accepted")
	}
	if _, err := budgets.Narrow(def, budgets.Limits{MaxTokens: -1}); err == nil {
		t.Fatal("a negative token limit was accepted")
	}
}

func TestCheck(t *testing.T) {
	priced := budget.Usage{Input: 700, Output: 200, Responses: 2, Cost: 0.5}
	unpriced := budget.Usage{Input: 700, Output: 200, Responses: 2, Unpriced: 1, Cost: 0.5}
	tests := []struct {
		name    string
		l       budgets.Limits
		u       budget.Usage
		reached string
		frac    float64
	}{
		{name: "no limits", u: priced},
		{name: "tokens under", l: budgets.Limits{MaxTokens: 1000}, u: priced, frac: 0.9},
		{name: "tokens reached", l: budgets.Limits{MaxTokens: 900}, u: priced, reached: "maxTokens", frac: 1},
		{name: "cost reached", l: budgets.Limits{MaxCostUSD: 0.5}, u: priced, reached: "maxCostUsd", frac: 1},
		{name: "cost under", l: budgets.Limits{MaxCostUSD: 1}, u: priced, frac: 0.5},
		{name: "unknown cost counts nothing", l: budgets.Limits{MaxCostUSD: 0.1}, u: unpriced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := budgets.Check(tt.l, tt.u)
			if v.Reached != tt.reached || math.Abs(v.Fraction-tt.frac) > 1e-9 {
				t.Fatalf("Check = %+v, want reached %q fraction %v", v, tt.reached, tt.frac)
			}
			if (v.Reached != "") != (v.Detail != "") {
				t.Fatalf("detail %q with reached %q", v.Detail, v.Reached)
			}
		})
	}
}

func response(t *testing.T, seq int64, provider, mdl string, u session.Usage) session.Event {
	t.Helper()
	data, err := json.Marshal(session.AssistantMessageData{Message: session.Message{Role: session.RoleAssistant,
		Source: session.Source{Provider: provider, Model: mdl}}, Usage: &u})
	if err != nil {
		t.Fatal(err)
	}
	return session.Event{Type: session.TypeAssistantMessage, Seq: seq, Data: data}
}

// The ledger's cost is the sum of the calls' costs at the table's list
// prices, an override wins, and an unknown price leaves the cost unknown.
func TestLedgerPricesAndOverrides(t *testing.T) {
	sonnet := session.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 400_000, ReasoningTokens: 10}
	events := []session.Event{
		response(t, 0, "anthropic", "claude-sonnet-4-5", sonnet),
		response(t, 1, "anthropic", "claude-sonnet-4-5", sonnet),
	}
	u := budgets.Own(events, 0, nil)
	// 600k uncached at $3 + 400k cached at $0.30 + 100k out at $15, twice.
	want := 2 * (0.6*3 + 0.4*0.30 + 0.1*15)
	if !u.CostKnown() || math.Abs(u.Cost-want) > 1e-9 {
		t.Fatalf("cost %v (known %v), want %v", u.Cost, u.CostKnown(), want)
	}
	if u.Input != 2_000_000 || u.Output != 200_000 || u.Cached != 800_000 || u.Reasoning != 20 || u.Responses != 2 {
		t.Fatalf("tokens %+v", u)
	}
	var sum float64
	for _, ev := range events {
		var tl budget.Tally
		tl.Add(ev)
		sum += tl.Cost
	}
	if math.Abs(sum-u.Cost) > 1e-9 {
		t.Fatalf("ledger cost %v differs from the per-call sum %v", u.Cost, sum)
	}
	over, err := budget.NewPrices(map[string]budget.Price{"anthropic/claude-sonnet": {Input: 1, Output: 1}, "claude": {Input: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if got := budgets.Own(events, 0, over).Cost; math.Abs(got-2*(0.6+0.1)) > 1e-9 {
		t.Fatalf("override cost %v", got)
	}
	unknown := budgets.Own([]session.Event{response(t, 0, "openai-compatible", "local", session.Usage{InputTokens: 5, OutputTokens: 5})}, 0, nil)
	if unknown.CostKnown() || unknown.Cost != 0 || unknown.Tokens() != 10 {
		t.Fatalf("unknown price: %+v", unknown)
	}
	if s := unknown.String(); strings.Contains(s, "$") {
		t.Fatalf("an unknown price shows a cost: %s", s)
	}
	if _, err := budget.NewPrices(map[string]budget.Price{"x": {Input: -1}}); err == nil {
		t.Fatal("a negative price was accepted")
	}
}

// A fork's inherited history is its parent's spending: the counter skips
// the seed, and finds the warning already given in the log.
func TestCounterSkipsTheSeedAndFindsTheWarning(t *testing.T) {
	u := session.Usage{InputTokens: 10, OutputTokens: 1}
	warn, _ := json.Marshal(session.Message{Role: session.RoleUser, Content: []session.Block{session.Text(budgets.WarningMarker + " x")}})
	events := []session.Event{
		response(t, 0, "p", "m", u), // seed
		response(t, 1, "p", "m", u),
		{Type: session.TypeUserMessage, Seq: 2, Data: warn},
	}
	var c budgets.Counter
	c.Fold(events[:2], 1)
	if got := c.Ledger().Usage(nil).Tokens(); got != 11 || c.Warned {
		t.Fatalf("tokens %d warned %v", got, c.Warned)
	}
	c.Fold(events[2:], 1)
	if !c.Warned || c.Next() != 3 {
		t.Fatalf("warned %v next %d", c.Warned, c.Next())
	}
}

// A tree's usage is the sum of its sessions' own ledgers; a session
// reporting again replaces its figure instead of adding to it.
func TestMeterSumsTheTree(t *testing.T) {
	m := budgets.NewMeter(nil)
	var a, b budgets.Ledger
	a.Count(model.Route{Provider: "anthropic", Model: "claude-haiku-4-5"}, session.Usage{InputTokens: 100, OutputTokens: 10})
	b.Count(model.Route{Provider: "anthropic", Model: "claude-haiku-4-5"}, session.Usage{InputTokens: 200, OutputTokens: 20})
	m.Set("root", "root", a)
	m.Set("root", "child", b)
	m.Set("root", "child", b)
	m.Seed("root", "child", budgets.Ledger{})
	m.Set("other", "x", b)
	got := m.Tree("root")
	want := a.Usage(nil)
	want.Add(b.Usage(nil))
	if got != want || got.Tokens() != 330 {
		t.Fatalf("tree %+v, want %+v", got, want)
	}
}

func TestLimitsRecordRoundTrip(t *testing.T) {
	l := budgets.Limits{MaxTokens: 5, MaxCostUSD: 0.25, MaxTurns: 2, Timeout: 1500 * time.Millisecond}
	ev, err := l.Event(3, 9)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Ignorable || ev.Type != budgets.TypeLimits {
		t.Fatalf("event %+v", ev)
	}
	got, ok, err := budgets.FoldLimits([]session.Event{{Type: session.TypeTurnStart}, ev})
	if err != nil || !ok || got != l {
		t.Fatalf("FoldLimits = %+v %v %v", got, ok, err)
	}
	if _, ok, err := budgets.FoldLimits(nil); ok || err != nil {
		t.Fatal("no record read as one")
	}
	bad := ev
	bad.Data = []byte(`{"maxTokens":-3}`)
	if _, _, err := budgets.FoldLimits([]session.Event{bad}); err == nil {
		t.Fatal("a malformed record was accepted")
	}
}

// The watchdog reports a quiet child once per stall, forgets it when it
// shows life or stops, and never fires while it is off.
func TestWatchdogWithAFakeClock(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	w := budgets.NewWatchdog(5*time.Minute, clock)
	w.Progress("a")
	w.Progress("b")
	now = now.Add(4 * time.Minute)
	w.Progress("b")
	if got := w.Sweep(); len(got) != 0 {
		t.Fatalf("stalled too early: %v", got)
	}
	now = now.Add(time.Minute)
	if got := w.Sweep(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("sweep %v, want [a]", got)
	}
	if got := w.Sweep(); len(got) != 0 {
		t.Fatalf("a stall was reported twice: %v", got)
	}
	if s, _ := w.Stalled("a"); !s {
		t.Fatal("a is not shown stalled")
	}
	w.Progress("a") // a printing command counts as progress
	if s, _ := w.Stalled("a"); s {
		t.Fatal("a is still stalled after progress")
	}
	now = now.Add(10 * time.Minute)
	w.Stop("b")
	if got := w.Sweep(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("sweep %v, want [a] (b stopped)", got)
	}
	off := budgets.NewWatchdog(0, clock)
	off.Progress("x")
	now = now.Add(time.Hour)
	if got := off.Sweep(); got != nil {
		t.Fatalf("an off watchdog fired: %v", got)
	}
}
