package agent_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestRequestAfterFailedTurnIsWellFormed: a turn whose model call fails
// leaves its user message without a reply; the next request must not
// carry [user, user] but one user message holding both prompts, with a
// marker saying the earlier request failed.
func TestRequestAfterFailedTurnIsWellFormed(t *testing.T) {
	s := newSession(t)
	calls := 0
	rec := &recorder{inner: modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
		return func(yield func(session.Chunk, error) bool) {
			calls++
			if calls == 1 {
				yield(session.Chunk{}, errTest)
				return
			}
			if yield(session.Chunk{Type: session.ChunkText, Text: "ok"}, nil) {
				yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishStop}, nil)
			}
		}
	})}
	a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t)})
	res, err := a.Prompt(t.Context(), userMsg("first"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason.Kind != session.TurnEndError {
		t.Fatalf("first turn ended %+v, want error", res.Reason)
	}
	if _, err := a.Prompt(t.Context(), userMsg("second")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if want := []string{"user"}; !slices.Equal(roles, want) {
		t.Fatalf("roles after a failed turn = %v, want %v", roles, want)
	}
	if got := session.JoinText(msgs[0].Content, "|"); got != "first|"+model.UnansweredNote+"|second" {
		t.Errorf("merged user message = %q, want both prompts in order, the failed one marked", got)
	}
	// The log itself is untouched: two user messages.
	if got := userTexts(t, s.MustEvents()); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("logged user messages = %v", got)
	}
}

func roles(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Role)
	}
	return out
}

func allText(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, bl := range m.Content {
			b.WriteString(bl.Text)
			for _, c := range bl.Content {
				b.WriteString(c.Text)
			}
			b.WriteString("|")
		}
	}
	return b.String()
}

func compactions(t *testing.T, s *session.Session) []session.CompactionData {
	var out []session.CompactionData
	for _, ev := range ofType(s.MustEvents(), session.TypeCompaction) {
		out = append(out, decode[session.CompactionData](t, ev))
	}
	return out
}

// TestManualCompact: /compact summarizes the whole conversation; the next
// request is system + summary + the new prompt, also for a new agent over
// the same log (a restart), and the log keeps every original message.
func TestManualCompact(t *testing.T) {
	s := newSession(t)
	rec := &recorder{inner: mustScript(t, `model:
  main:
    - text: answer one (a long answer, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, end)
    - text: answer two
  main/compact:
    - text: "## Intent\nsay hello"
`)}
	a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t), System: "sys"})
	if _, err := a.Prompt(t.Context(), userMsg("first")); err != nil {
		t.Fatal(err)
	}
	d, err := a.Compact(t.Context(), "keep it short")
	if err != nil {
		t.Fatalf("Compact: %v (%+v)", err, d)
	}
	if d.Outcome != session.CompactionCompleted || d.Trigger != session.TriggerManual || d.PreTokens <= 0 || d.PostTokens <= 0 {
		t.Errorf("compaction = %+v", d)
	}
	reqs := rec.requests()
	sum := reqs[len(reqs)-1]
	if sum.Caller.ScriptKey != "main"+agent.CompactScriptSuffix || len(sum.Tools) != 0 || !strings.Contains(allText(sum.Messages), "keep it short") || !strings.Contains(allText(sum.Messages), "answer one") {
		t.Errorf("summary request = %+v", sum)
	}
	if _, err := a.Prompt(t.Context(), userMsg("second")); err != nil {
		t.Fatal(err)
	}
	reqs = rec.requests()
	next := reqs[len(reqs)-1]
	if got := roles(next.Messages); !slices.Equal(got, []string{"user"}) {
		t.Fatalf("roles after compaction = %v", got)
	}
	txt := allText(next.Messages)
	if !strings.Contains(txt, "say hello") || !strings.Contains(txt, "second") || strings.Contains(txt, "answer one") || next.System != "sys" {
		t.Errorf("request after compaction = %q", txt)
	}
	if got := userTexts(t, s.MustEvents()); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("log lost messages: %v", got)
	}

	// A restart: a fresh agent over the same log builds the same view.
	rec2 := &recorder{inner: mustScript(t, "model:\n  main:\n    - text: three\n")}
	b := newAgent(t, s, agent.Options{Model: rec2, Tools: registry(t), System: "sys"})
	if _, err := b.Prompt(t.Context(), userMsg("third")); err != nil {
		t.Fatal(err)
	}
	after := allText(rec2.requests()[0].Messages)
	if !strings.Contains(after, "say hello") || strings.Contains(after, "answer one") || !strings.Contains(after, "answer two") {
		t.Errorf("view after restart = %q", after)
	}
}

// TestAutoCompactKeepsRequestsUnderWindow: with a small window, a session
// of large tool results compacts by itself and no request passes the
// threshold.
func TestAutoCompactKeepsRequestsUnderWindow(t *testing.T) {
	s := newSession(t)
	big := strings.Repeat("x", 3000) // ~1000 estimated tokens
	var script strings.Builder
	script.WriteString("model:\n  main:\n")
	for i := range 12 {
		fmt.Fprintf(&script, "    - tool_calls: [{id: c%d, name: echo, arguments: '{\"text\":\"%s\"}'}]\n    - text: done %d\n", i, big, i)
	}
	script.WriteString("  main/compact:\n")
	for range 12 {
		script.WriteString("    - text: summary so far\n")
	}
	rec := &recorder{inner: mustScript(t, script.String())}
	cfg := budget.Config{Window: 8000}
	a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t, echoTool()), Budget: cfg})
	for i := range 12 {
		if _, err := a.Prompt(t.Context(), userMsg(fmt.Sprintf("turn %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	limit := cfg.Limit(model.Route{})
	for i, r := range rec.requests() {
		if n := budget.EstimateRequest(r); n > limit {
			t.Errorf("request %d holds %d estimated tokens, over the limit %d", i, n, limit)
		}
	}
	cs := compactions(t, s)
	if len(cs) == 0 {
		t.Fatal("no compaction happened")
	}
	for _, c := range cs {
		if c.Trigger != session.TriggerAuto || c.Outcome != session.CompactionCompleted || c.PostTokens >= c.PreTokens {
			t.Errorf("compaction %+v", c)
		}
	}
}

// TestOverflowCompactsOnceAndRetries: a context_length_exceeded answer
// triggers one compaction and one retry of the same step.
func TestOverflowCompactsOnceAndRetries(t *testing.T) {
	s := newSession(t)
	var reqs []model.Request
	m := modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
		return func(yield func(session.Chunk, error) bool) {
			reqs = append(reqs, req)
			text := "ok (a long answer, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, end)"
			switch {
			case req.Caller.ScriptKey == "main"+agent.CompactScriptSuffix:
				text = "the summary"
			case len(reqs) == 2:
				yield(session.Chunk{}, fmt.Errorf("provider: %w", model.ErrContextLength))
				return
			}
			if yield(session.Chunk{Type: session.ChunkText, Text: text}, nil) {
				yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishStop}, nil)
			}
		}
	})
	a := newAgent(t, s, agent.Options{Model: m, Tools: registry(t)})
	if _, err := a.Prompt(t.Context(), userMsg("one")); err != nil {
		t.Fatal(err)
	}
	res, err := a.Prompt(t.Context(), userMsg("two"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason.Kind != session.TurnEndCompleted {
		t.Fatalf("turn after overflow ended %+v", res.Reason)
	}
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (one, two refused, summary, retry)", len(reqs))
	}
	retry := allText(reqs[3].Messages)
	if !strings.Contains(retry, "the summary") || !strings.Contains(retry, "two") {
		t.Errorf("retried request = %q", retry)
	}
	cs := compactions(t, s)
	if len(cs) != 1 || cs[0].Trigger != session.TriggerOverflow {
		t.Errorf("compactions = %+v", cs)
	}
}

// TestCompactionFailureAndCancelKeepOldContext: a failed or cancelled
// summary is recorded with its cause, and the next request carries the old
// context unchanged.
func TestCompactionFailureAndCancelKeepOldContext(t *testing.T) {
	for _, tt := range []struct {
		name    string
		reply   string
		outcome string
	}{
		{"failed summary", "    - error: summarizer down\n", session.CompactionFailed},
		{"cancel during compaction", "    - hang: true\n", session.CompactionCancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			rec := &recorder{inner: mustScript(t, "model:\n  main:\n    - text: answer one\n    - text: answer two\n  main/compact:\n"+tt.reply)}
			a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t)})
			if _, err := a.Prompt(t.Context(), userMsg("first")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			if tt.outcome == session.CompactionCancelled {
				unsub := a.Subscribe(func(u agent.Update) {
					if u.Notice != nil && u.Notice.Kind == agent.NoticeCompaction {
						cancel() // the summary request is about to start
					}
				})
				defer unsub()
			}
			d, err := a.Compact(ctx, "")
			cancel()
			if err == nil || d.Outcome != tt.outcome {
				t.Fatalf("Compact = %+v, %v; want outcome %s and an error", d, err, tt.outcome)
			}
			cs := compactions(t, s)
			if len(cs) != 1 || cs[0].Outcome != tt.outcome || cs[0].Error == "" {
				t.Fatalf("recorded = %+v", cs)
			}
			if _, err := a.Prompt(t.Context(), userMsg("second")); err != nil {
				t.Fatal(err)
			}
			reqs := rec.requests()
			got := allText(reqs[len(reqs)-1].Messages)
			if !strings.Contains(got, "first") || !strings.Contains(got, "answer one") || !strings.Contains(got, "second") {
				t.Errorf("request after a %s = %q", tt.outcome, got)
			}
		})
	}
}

// TestCompactionThatWouldNotShrink: /compact on a short conversation whose
// summary is longer than what it replaces is recorded as failed with a
// cause that says why, and the next request carries the old context.
func TestCompactionThatWouldNotShrink(t *testing.T) {
	long := strings.Repeat("a long summary sentence that says more than the conversation did. ", 20)
	for _, tt := range []struct {
		name    string
		summary string
		applied bool
	}{
		{"longer summary", long, false},
		{"shorter summary", "## Intent\nhi", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			rec := &recorder{inner: mustScript(t, "model:\n  main:\n    - text: answer one is a somewhat longer answer, so a short summary is smaller\n    - text: answer two\n  main/compact:\n    - text: "+strconv.Quote(tt.summary)+"\n")}
			a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t)})
			if _, err := a.Prompt(t.Context(), userMsg("first question, also a little longer than a word or two")); err != nil {
				t.Fatal(err)
			}
			d, err := a.Compact(t.Context(), "")
			// Compact answers once its turn has ended: a prompt sent
			// next cannot be spliced before the turn/end.
			if evs := s.MustEvents(); evs[len(evs)-1].Type != session.TypeTurnEnd {
				t.Errorf("Compact returned before its turn ended: the log ends with %s", evs[len(evs)-1].Type)
			}
			if tt.applied {
				if err != nil || d.Outcome != session.CompactionCompleted || d.PostTokens >= d.PreTokens {
					t.Fatalf("Compact = %+v, %v; want completed and smaller", d, err)
				}
				return
			}
			if !errors.Is(err, agent.ErrWouldNotShrink) || d.Outcome != session.CompactionFailed {
				t.Fatalf("Compact = %+v, %v; want failed with ErrWouldNotShrink", d, err)
			}
			if !strings.Contains(err.Error(), "would not be smaller") {
				t.Errorf("error %q does not say why", err)
			}
			cs := compactions(t, s)
			if len(cs) != 1 || cs[0].Outcome != session.CompactionFailed || cs[0].Summary != "" || cs[0].Error == "" {
				t.Fatalf("recorded = %+v", cs)
			}
			if _, err := a.Prompt(t.Context(), userMsg("second")); err != nil {
				t.Fatal(err)
			}
			reqs := rec.requests()
			got := allText(reqs[len(reqs)-1].Messages)
			if !strings.Contains(got, "first question") || strings.Contains(got, "long summary sentence") {
				t.Errorf("request after a refused compaction = %q", got)
			}
		})
	}
}
