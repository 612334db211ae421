package agent_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// errBroken is a provider failure after the response opened (a stall or a
// cut): model.ErrStreamBroken.
var errBroken = fmt.Errorf("%w: connection reset", model.ErrStreamBroken)

// streamScript is a fake model at the boundary: call i streams replies[i]
// (the last repeats) and records each request.
type streamScript struct {
	mu      sync.Mutex
	replies [][]session.Chunk
	errs    []error // errs[i] ends call i after its chunks, nil for a finish
	reqs    []model.Request
}

func (m *streamScript) Stream(_ context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m.mu.Lock()
	i := min(len(m.reqs), len(m.replies)-1)
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return func(yield func(session.Chunk, error) bool) {
		for _, c := range m.replies[i] {
			if !yield(c, nil) {
				return
			}
		}
		if m.errs[i] != nil {
			yield(session.Chunk{}, m.errs[i])
			return
		}
		yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishStop}, nil)
	}
}

func (m *streamScript) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

func text(s string) session.Chunk { return session.Chunk{Type: session.ChunkText, Text: s} }

func partialCall() session.Chunk {
	return session.Chunk{Type: session.ChunkToolCall, Index: 0, ID: "c1", Name: "echo", Arguments: `{"text":"hal`}
}

// TestBrokenStreamIsRetriedOnce: a stream that stalls or is cut after some
// chunks (mid-text and mid-tool-call) keeps the partial reply in the log
// as shown, interrupted and retried, off the model's view; the person gets
// a retry notice; the request goes out once more, identical but for its
// call index; and the turn completes on the second answer. A restart
// counts the retried call.
func TestBrokenStreamIsRetriedOnce(t *testing.T) {
	for _, tt := range []struct {
		name    string
		partial []session.Chunk
	}{
		{"mid text", []session.Chunk{text("Half an ans")}},
		{"mid tool call", []session.Chunk{text(""), partialCall()}},
		{"before any chunk", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			m := &streamScript{
				replies: [][]session.Chunk{tt.partial, {text("The whole answer.")}},
				errs:    []error{errBroken, nil},
			}
			a := newAgent(t, s, agent.Options{Model: m, Tools: registry(t, echoTool())})
			res, err := a.Prompt(t.Context(), userMsg("question"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason.Kind != session.TurnEndCompleted || session.JoinText(res.Output, "") != "The whole answer." {
				t.Fatalf("turn %+v output %+v, want completed with the second answer", res.Reason, res.Output)
			}
			reqs := m.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			if !slices.Equal(roles(reqs[1].Messages), []string{"user"}) || allText(reqs[1].Messages) != allText(reqs[0].Messages) {
				t.Errorf("retried request %v %q, want the first request again", roles(reqs[1].Messages), allText(reqs[1].Messages))
			}
			if reqs[0].Caller.Call != 0 || reqs[1].Caller.Call != 1 {
				t.Errorf("call indexes %d, %d; want 0, 1", reqs[0].Caller.Call, reqs[1].Caller.Call)
			}
			evs := s.MustEvents()
			// The notice is recorded, right after the partial reply, so a
			// replay shows it where it was shown live.
			notices := ofType(evs, session.TypeNotice)
			if len(notices) != 1 {
				t.Fatalf("%d notices recorded, want one", len(notices))
			}
			if n := decode[session.NoticeData](t, notices[0]); n.Kind != model.NoticeRetry || n.Attempt != 1 || n.Turn != 1 || n.Step != 1 || !strings.Contains(n.Message, "broke off") {
				t.Errorf("notice %+v, want the retry of turn 1, step 1", n)
			}
			if prev := evs[notices[0].Seq-1]; prev.Type != session.TypeAssistantMessage {
				t.Errorf("the notice follows %s, want the partial reply", prev.Type)
			}
			msgs := ofType(evs, session.TypeAssistantMessage)
			if len(msgs) != 2 {
				t.Fatalf("%d assistant messages, want the partial and the answer", len(msgs))
			}
			d := decode[session.AssistantMessageData](t, msgs[0])
			if !d.Interrupted || !d.Retried || d.Error == nil {
				t.Errorf("partial record %+v, want interrupted, retried, with the error", d)
			}
			if tt.partial != nil && len(d.Message.Content) > 0 && session.JoinText(d.Message.Content, "") != session.JoinText(blocksOf(tt.partial), "") {
				t.Errorf("partial content %+v", d.Message.Content)
			}
			if n := len(ofType(evs, session.TypeToolCall)); n != 0 {
				t.Errorf("%d tool calls ran from a broken reply", n)
			}
			// The next prompt: the view holds the complete answer only.
			if _, err := a.Prompt(t.Context(), userMsg("next")); err != nil {
				t.Fatal(err)
			}
			last := m.requests()[2]
			if got := roles(last.Messages); !slices.Equal(got, []string{"user", "assistant", "user"}) {
				t.Errorf("next request roles %v", got)
			}
			if strings.Contains(allText(last.Messages), "Half an ans") {
				t.Errorf("the partial reply reached the model: %q", allText(last.Messages))
			}
			if last.Caller.Call != 2 {
				t.Errorf("next call index %d, want 2", last.Caller.Call)
			}
			// A restart derives the same count from the log.
			if err := a.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			b := newAgent(t, s, agent.Options{Model: m, Tools: registry(t, echoTool())})
			if _, err := b.Prompt(t.Context(), userMsg("after restart")); err != nil {
				t.Fatal(err)
			}
			if c := m.requests()[3].Caller.Call; c != 3 {
				t.Errorf("call index after restart %d, want 3", c)
			}
		})
	}
}

func blocksOf(cs []session.Chunk) []session.Block {
	var out []session.Block
	for _, c := range cs {
		if c.Type == session.ChunkText && c.Text != "" {
			out = append(out, session.Text(c.Text))
		}
	}
	return out
}

// TestBrokenTwiceLeavesAWellFormedView: when the retry breaks too, the
// turn fails; the partial reply stays in the view only marked
// interrupted (with text) or not at all (mid tool call), and the next
// request never has two user messages in a row.
func TestBrokenTwiceLeavesAWellFormedView(t *testing.T) {
	for _, tt := range []struct {
		name      string
		partial   []session.Chunk
		wantRoles []string
		wantText  string
	}{
		{"mid text", []session.Chunk{text("Half an ans")}, []string{"user", "assistant", "user"},
			"question|Half an ans|" + model.InterruptedNote + "|next"},
		{"mid tool call", []session.Chunk{partialCall()}, []string{"user"},
			"question|" + model.UnansweredNote + "|next"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			m := &streamScript{
				replies: [][]session.Chunk{tt.partial, tt.partial, {text("ok")}},
				errs:    []error{errBroken, errBroken, nil},
			}
			a := newAgent(t, s, agent.Options{Model: m, Tools: registry(t, echoTool())})
			res, err := a.Prompt(t.Context(), userMsg("question"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason.Kind != session.TurnEndError || len(m.requests()) != 2 {
				t.Fatalf("turn %+v after %d requests, want an error after 2", res.Reason, len(m.requests()))
			}
			if _, err := a.Prompt(t.Context(), userMsg("next")); err != nil {
				t.Fatal(err)
			}
			last := m.requests()[2]
			if got := roles(last.Messages); !slices.Equal(got, tt.wantRoles) {
				t.Errorf("roles %v, want %v", got, tt.wantRoles)
			}
			var parts []string
			for _, msg := range last.Messages {
				for _, b := range msg.Content {
					if b.Type == session.BlockText && b.Text != "" {
						parts = append(parts, b.Text)
					}
				}
			}
			if got := strings.Join(parts, "|"); got != tt.wantText {
				t.Errorf("view text %q, want %q", got, tt.wantText)
			}
		})
	}
}
