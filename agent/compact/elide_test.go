package compact

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestElideCutsTheMiddleOfOversizedTexts: user texts and tool results over
// the limit keep their head and tail around the note; assistant messages
// and short texts are untouched, and the input is not written through.
func TestElideCutsTheMiddleOfOversizedTexts(t *testing.T) {
	long := "HEAD " + strings.Repeat("é", 3000) + " TAIL"
	msgs := []model.Message{
		{Role: session.RoleUser, Content: []session.Block{session.Text(long), session.Text("short")}},
		{Role: session.RoleAssistant, Content: []session.Block{session.Text(long)}},
		{Role: model.RoleTool, Content: []session.Block{{Type: session.BlockToolResult, Content: []session.Block{session.Text(long)}}}},
	}
	out, n := Elide(msgs, 300)
	if n != 2 {
		t.Fatalf("%d texts cut, want 2", n)
	}
	for _, s := range []string{out[0].Content[0].Text, out[2].Content[0].Content[0].Text} {
		if !strings.HasPrefix(s, "HEAD ") || !strings.HasSuffix(s, " TAIL") || !strings.Contains(s, "cut from the middle") || !utf8.ValidString(s) {
			t.Errorf("cut text %.60q…", s)
		}
		if budget.EstimateText(s) > 400 {
			t.Errorf("cut text still %d tokens", budget.EstimateText(s))
		}
	}
	if out[0].Content[1].Text != "short" || out[1].Content[0].Text != long || msgs[0].Content[0].Text != long || msgs[2].Content[0].Content[0].Text != long {
		t.Error("Elide changed what it must not")
	}
}

// FuzzElide: any text cut by Elide stays valid UTF-8 and keeps its first
// and last runes; WindowFromError never panics on provider text.
func FuzzElide(f *testing.F) {
	f.Add("prompt is too long: 210000 tokens > 200000 maximum", 256)
	f.Add(strings.Repeat("日本語", 500), 10)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		_ = WindowFromError(errors.New(s))
		if !utf8.ValidString(s) || limit <= 0 || limit > 1<<20 {
			return
		}
		out, n := Elide([]model.Message{{Role: session.RoleUser, Content: []session.Block{session.Text(s)}}}, limit)
		got := out[0].Content[0].Text
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 after the cut")
		}
		if n > 0 {
			first, _ := utf8.DecodeRuneInString(s)
			last, _ := utf8.DecodeLastRuneInString(s)
			if !strings.HasPrefix(got, string(first)) && len(s) > 0 || !strings.HasSuffix(got, string(last)) {
				t.Fatalf("cut lost the first or last rune")
			}
		}
	})
}
