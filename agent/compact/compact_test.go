package compact

import (
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

func msg(seq int64, kind string, text string) session.SurfaceMessage {
	role := session.RoleUser
	if kind == session.SourceModel {
		role = session.RoleAssistant
	}
	return session.SurfaceMessage{Seq: seq, Message: session.Message{Role: role, Source: session.Source{Kind: kind}, Content: []session.Block{session.Text(text)}}}
}

// TestCutKeepsCallsWithResults: the kept view never starts with a tool
// result, keeps at least the newest boundary unless forced, and keeps as
// much as fits.
func TestCutKeepsCallsWithResults(t *testing.T) {
	big := strings.Repeat("x", 3000) // ~1000 tokens
	hist := []session.SurfaceMessage{
		msg(0, session.SourceUser, "first"),
		msg(1, session.SourceModel, "calling"),
		msg(2, session.SourceTool, big),
		msg(3, session.SourceModel, "done"),
		msg(4, session.SourceUser, "second"),
		msg(5, session.SourceModel, "calling"),
		msg(6, session.SourceTool, big),
	}
	tests := []struct {
		keep  int
		force bool
		ok    bool
		upTo  int64
		keepN int
	}{
		{keep: 0, ok: true, upTo: 4, keepN: 2},    // only the newest boundary (seq 5) and its result
		{keep: 1010, ok: true, upTo: 4, keepN: 2}, // the newest step alone passes it: kept anyway
		{keep: 1100, ok: true, upTo: 2, keepN: 4}, // the whole second turn and "done" fit
		{keep: 100000, ok: false},                 // everything fits: nothing to cut
		{keep: 0, force: true, ok: true, upTo: 6, keepN: 0},
	}
	for _, tt := range tests {
		p, ok := Cut(hist, tt.keep, tt.force)
		if ok != tt.ok {
			t.Errorf("Cut(keep %d, force %v) ok = %v", tt.keep, tt.force, ok)
			continue
		}
		if !ok {
			continue
		}
		if p.UpTo != tt.upTo || len(p.Keep) != tt.keepN || len(p.Covered)+len(p.Keep) != len(hist) {
			t.Errorf("Cut(keep %d, force %v) = upTo %d, keep %d, covered %d", tt.keep, tt.force, p.UpTo, len(p.Keep), len(p.Covered))
		}
		if len(p.Keep) > 0 && p.Keep[0].Message.Source.Kind == session.SourceTool {
			t.Errorf("kept view starts with a tool result")
		}
	}
}

func TestRequestAsksForTheStructuredSummary(t *testing.T) {
	hist := []session.SurfaceMessage{msg(0, session.SourceUser, "hi"), msg(1, session.SourceModel, "hello")}
	req := Request(modelRequest(), hist, "keep names", 0)
	last := req.Messages[len(req.Messages)-1]
	text := session.JoinText(last.Content, "\n")
	for _, want := range []string{"## Intent", "## Decisions", "## Files touched", "## State", "## Next steps", "keep names"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary request lacks %q", want)
		}
	}
	if req.System != System || req.Tools != nil || len(req.Messages) != 3 {
		t.Errorf("request = %+v", req)
	}
}

func modelRequest() model.Request {
	return model.Request{System: "sys", Tools: []model.ToolSpec{{Name: "read"}}}
}
