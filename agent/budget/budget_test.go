package budget

import (
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

func TestWindowAndPriceTable(t *testing.T) {
	tests := []struct {
		route  model.Route
		window int
		priced bool
	}{
		{model.Route{Provider: "deepseek", Model: "deepseek-chat"}, 128_000, true},
		{model.Route{Provider: "openai", Model: "gpt-4.1-2025-04-14"}, 1_047_576, true},
		{model.Route{Provider: "openai", Model: "gpt-4.1-mini"}, 1_047_576, true},
		{model.Route{Provider: "openai", Model: "gpt-4o-mini-2024-07-18"}, 128_000, true},
		{model.Route{Provider: "openai", Model: "gpt-4"}, 8_192, false},
		{model.Route{Provider: "openai-compatible", Model: "gpt-4o"}, 128_000, false}, // window known, price is the server's
		{model.Route{Provider: "openai-compatible", Model: "llama3"}, 0, false},
		{model.Route{}, 0, false},
	}
	for _, tt := range tests {
		if got := KnownWindow(tt.route); got != tt.window {
			t.Errorf("KnownWindow(%v) = %d, want %d", tt.route, got, tt.window)
		}
		if _, ok := KnownPrice(tt.route); ok != tt.priced {
			t.Errorf("KnownPrice(%v) ok = %v, want %v", tt.route, ok, tt.priced)
		}
	}
	c := Config{Window: 4000}
	if c.WindowFor(model.Route{Provider: "deepseek", Model: "deepseek-chat"}) != 4000 || c.Limit(model.Route{}) != 3200 {
		t.Errorf("override: window %d limit %d", c.WindowFor(model.Route{}), c.Limit(model.Route{}))
	}
	deepseek := model.Route{Provider: "deepseek", Model: "deepseek-chat"}
	llama := model.Route{Provider: "openai-compatible", Model: "llama3"}
	per := Config{Window: 4000, Windows: map[model.Route]int{llama: 32_768}}
	if per.WindowFor(llama) != 32_768 || per.WindowFor(deepseek) != 4000 || (Config{Windows: per.Windows}).WindowFor(deepseek) != 128_000 {
		t.Errorf("per-model windows: llama %d, deepseek %d / %d", per.WindowFor(llama), per.WindowFor(deepseek), (Config{Windows: per.Windows}).WindowFor(deepseek))
	}
	if (Config{Threshold: 0.5}).Limit(model.Route{Provider: "deepseek", Model: "deepseek-chat"}) != 64_000 {
		t.Error("threshold not applied")
	}
}

// TestEstimateIsConservative: the estimate never undercounts the usual
// four bytes per token.
func TestEstimateIsConservative(t *testing.T) {
	for _, s := range []string{"", "a", "hello world", "func main() { fmt.Println(\"hi\") }"} {
		if n := EstimateText(s); n*4 < len(s) {
			t.Errorf("EstimateText(%q) = %d", s, n)
		}
	}
}

// TestFoldUsage: reported usage sets what is in context; uncounted
// messages after it are added; a completed compaction resets it; cost is
// summed only for priced models.
func TestFoldUsage(t *testing.T) {
	asst := func(seq int64, u *session.Usage, provider, id string) session.Event {
		return session.Event{Type: session.TypeAssistantMessage, Seq: seq, SurfaceOp: session.AppendOp, Data: session.MustData(session.AssistantMessageData{
			Message: session.Message{Role: session.RoleAssistant, Source: session.Source{Kind: session.SourceModel, Provider: provider, Model: id}}, Usage: u})}
	}
	user := session.Event{Type: session.TypeUserMessage, Seq: 1, SurfaceOp: session.AppendOp, Data: session.MustData(session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("next question please")}})}
	evs := []session.Event{
		asst(0, &session.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}, "deepseek", "deepseek-chat"),
		user,
	}
	tl := Fold(evs)
	if tl.Calls != 1 || tl.Responses != 1 || tl.Used <= 2_000_000 || tl.Priced() != 1 || tl.Cost < 0.69 || tl.Cost > 0.71 {
		t.Errorf("tally = %+v", tl)
	}
	evs = append(evs, session.Event{Type: session.TypeCompaction, Seq: 2, Data: session.MustData(session.CompactionData{Outcome: session.CompactionCompleted, PostTokens: 1234})},
		session.Event{Type: session.TypeCompaction, Seq: 3, Data: session.MustData(session.CompactionData{Outcome: session.CompactionFailed, PostTokens: 1})},
		asst(4, &session.Usage{InputTokens: 10, OutputTokens: 5}, "openai-compatible", "llama3"))
	tl = Fold(evs)
	if tl.Compactions != 1 || tl.Used != 15 || tl.Priced() != 1 || tl.Responses != 2 {
		t.Errorf("after compaction: %+v", tl)
	}
}
