package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

const (
	tStart  = session.TypeTurnStart
	tEnd    = session.TypeTurnEnd
	sStart  = session.TypeStepStart
	sEnd    = session.TypeStepEnd
	splice  = session.TypeInboxSpliced
	umsg    = session.TypeUserMessage
	title   = session.TypeSessionTitle
	chunk   = session.TypeAssistantChunk
	amsg    = session.TypeAssistantMessage
	tcall   = session.TypeToolCall
	tresult = session.TypeToolResult
)

func TestTurnEventSequence(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   []string
		output string
	}{
		{
			name:   "text only",
			script: "model:\n  main:\n    - text: hello world\n      usage: {input: 3, output: 2}\n",
			want: []string{splice, tStart, splice, sStart, umsg, title,
				chunk, chunk, chunk, chunk, amsg, sEnd, tEnd},
			output: "hello world",
		},
		{
			name: "one tool call",
			script: `model:
  main:
    - tool_calls:
        - {id: call_1, name: echo, arguments: '{"text": "hi"}'}
      usage: {input: 10, output: 5}
    - text: DONE
`,
			want: []string{splice, tStart, splice, sStart, umsg, title,
				chunk, chunk, chunk, amsg, tcall, tresult, sEnd,
				sStart, chunk, chunk, amsg, sEnd, tEnd},
			output: "DONE",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			d := &durableLog{s: s}
			a := newAgent(t, s, agent.Options{
				Model: mustScript(t, tt.script), Tools: registry(t, echoTool()),
				Route:   model.Route{Provider: "scripted", Model: "m1"},
				Journal: d,
			})
			res, err := a.Prompt(t.Context(), userMsg("Please say hello to the entire wide world"))
			if err != nil {
				t.Fatal(err)
			}
			evs := s.MustEvents()
			if got := types(evs); !slices.Equal(got, tt.want) {
				t.Fatalf("event types\n got %q\nwant %q", got, tt.want)
			}
			if res.Turn != 1 || res.Reason.Kind != session.TurnEndCompleted {
				t.Errorf("result = %+v, want turn 1 completed", res)
			}
			if got := session.JoinText(res.Output, ""); got != tt.output {
				t.Errorf("output = %q, want %q", got, tt.output)
			}
			// Insert splice, then claim splice.
			ins := decode[session.InboxSplicedData](t, evs[0])
			if ins.Target != session.InboxNextTurn || ins.Start != 0 || ins.RemovedCount != nil || len(ins.Inserted) != 1 {
				t.Errorf("insert splice = %+v", ins)
			}
			claim := decode[session.InboxSplicedData](t, evs[2])
			if claim.RemovedCount == nil || *claim.RemovedCount != 1 || len(claim.Inserted) != 0 || claim.Inserted == nil {
				t.Errorf("claim splice = %+v", claim)
			}
			um := decode[session.Message](t, evs[4])
			if um.ID != ins.Inserted[0].ID || um.Role != "user" || um.Source.Kind != "user" || evs[4].SurfaceOp == nil {
				t.Errorf("user/message = %+v (surfaceOp %v)", um, evs[4].SurfaceOp)
			}
			td := decode[session.TitleData](t, evs[5])
			if td.Title != "Please say hello to the" || !slices.Equal(td.MessageSeqs, []int64{4}) || td.Source.Kind != "fallback" {
				t.Errorf("title = %+v", td)
			}
			checkSources(t, evs)
			if want := len(ofType(evs, sStart)) + len(ofType(evs, tcall)) + 1; d.syncs != want {
				t.Errorf("checkpoints = %d, want %d (one per model request, one per tool call and one at turn end)", d.syncs, want)
			}
		})
	}
}

// checkSources checks that each assistant/message is sourced by exactly
// the chunks before it and each tool/result by its tool/call.
func checkSources(t *testing.T, evs []session.Event) {
	t.Helper()
	for _, ev := range ofType(evs, amsg) {
		var want []int64
		for j := ev.Seq - 1; j >= 0 && evs[j].Type == chunk; j-- {
			want = append([]int64{j}, want...)
		}
		if !slices.Equal(ev.SourceEventSeqs, want) {
			t.Errorf("assistant/message %d sources %v, want %v", ev.Seq, ev.SourceEventSeqs, want)
		}
		d := decode[session.AssistantMessageData](t, ev)
		if d.Message.Source != (session.Source{Kind: "model", Provider: "scripted", Model: "m1"}) || d.Message.ID == "" {
			t.Errorf("assistant source = %+v", d.Message.Source)
		}
	}
	for _, ev := range ofType(evs, tresult) {
		call := ofType(evs, tcall)[0]
		if !slices.Equal(ev.SourceEventSeqs, []int64{call.Seq}) {
			t.Errorf("tool/result sources %v, want [%d]", ev.SourceEventSeqs, call.Seq)
		}
		d := decode[session.ToolResultData](t, ev)
		b := d.Message.Content[0]
		if d.Message.Source.Kind != "tool" || d.Message.Source.CallID != "call_1" || b.Type != "tool-result" ||
			b.ToolCallID != "call_1" || b.IsError || session.JoinText(b.Content, "") != "echo: hi" {
			t.Errorf("tool/result = %+v", d)
		}
	}
}

func TestRequestsCarryHistoryAndCallIndex(t *testing.T) {
	s := newSession(t)
	rec := &recorder{inner: mustScript(t, `model:
  child-label:
    - tool_calls: [{id: c1, name: echo, arguments: '{"text":"x"}'}]
    - text: first
    - text: second
`)}
	a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t, echoTool()), ScriptKey: "child-label", System: "sys"})
	for _, p := range []string{"one", "two"} {
		if _, err := a.Prompt(t.Context(), userMsg(p)); err != nil {
			t.Fatal(err)
		}
	}
	reqs := rec.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Caller.Call != i || r.Caller.ScriptKey != "child-label" || r.Caller.SessionID != s.ID() || r.System != "sys" {
			t.Errorf("request %d caller = %+v system %q", i, r.Caller, r.System)
		}
		if len(r.Tools) != 1 || r.Tools[0].Name != "echo" {
			t.Errorf("request %d tools = %+v", i, r.Tools)
		}
	}
	var roles []string
	for _, m := range reqs[2].Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"user", "assistant", "tool", "assistant", "user"}; !slices.Equal(roles, want) {
		t.Errorf("history roles = %v, want %v", roles, want)
	}
	if got := ofType(s.MustEvents(), title); len(got) != 1 {
		t.Errorf("%d titles, want 1 (first turn only)", len(got))
	}
}

// TestCallIndexOwnSuffix: a session seeded by a fork counts only its own
// model calls, and a new agent on an existing log continues the count.
func TestCallIndexOwnSuffix(t *testing.T) {
	st := session.NewStore(&session.DeterministicSources{})
	parent, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pa := agent.New(parent, agent.Options{Model: mustScript(t, "model:\n  main:\n    - text: parent\n")})
	if _, err := pa.Prompt(t.Context(), userMsg("p")); err != nil {
		t.Fatal(err)
	}
	if err := pa.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	child, err := st.Fork(parent.ID(), session.ForkOptions{Boundary: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{inner: mustScript(t, "model:\n  kid:\n    - text: a\n    - text: b\n")}
	for i := range 2 {
		ca := agent.New(child, agent.Options{Model: rec, ScriptKey: "kid"})
		res, err := ca.Prompt(t.Context(), userMsg("c"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Turn != 2+i {
			t.Errorf("child turn = %d, want %d (inherited numbering)", res.Turn, 2+i)
		}
		if err := ca.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	reqs := rec.requests()
	if len(reqs) != 2 || reqs[0].Caller.Call != 0 || reqs[1].Caller.Call != 1 {
		t.Fatalf("child calls = %+v", reqs)
	}
	if n := len(reqs[0].Messages); n != 3 {
		t.Errorf("child first request has %d messages, want 3 (seeded parent history + prompt)", n)
	}
}

// gate is a model that streams "working" and then waits for release.
func gatedModel(release <-chan struct{}, final string) model.Model {
	return modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
		return func(yield func(session.Chunk, error) bool) {
			select {
			case <-release:
			case <-ctx.Done():
				yield(session.Chunk{}, context.Cause(ctx))
				return
			}
			yield(session.Chunk{Type: session.ChunkText, Text: final}, nil)
		}
	})
}

func TestSteerDeliveredAtNextStepBoundary(t *testing.T) {
	t.Run("after a tool step", testSteerAfterToolStep)
	t.Run("during the last step adds a step", testSteerDuringLastStep)
	t.Run("idle steer is a followup", testIdleSteerIsFollowup)
}

func testSteerAfterToolStep(t *testing.T) {
	s := newSession(t)
	release := make(chan struct{})
	started := make(chan struct{})
	blocking := funcTool{
		spec: model.ToolSpec{Name: "wait", Parameters: json.RawMessage(`{"type":"object"}`)},
		fn: func(ctx context.Context, _ tool.Invocation) (tool.Result, error) {
			close(started)
			<-release
			return tool.TextResult("waited", nil), nil
		},
	}
	a := newAgent(t, s, agent.Options{Tools: registry(t, blocking), Model: mustScript(t, `model:
  main:
    - tool_calls: [{id: w, name: wait, arguments: '{}'}]
    - text: steered
`)})
	if _, err := a.Followup(userMsg("start")); err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := a.Steer(userMsg("change course")); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	i := slices.Index(types(evs), sEnd)
	want := []string{sEnd, splice, sStart, umsg, chunk, chunk, amsg, sEnd, tEnd}
	if got := types(evs[i:]); !slices.Equal(got, want) {
		t.Fatalf("tail\n got %q\nwant %q", got, want)
	}
	ins := decode[session.InboxSplicedData](t, ofType(evs, splice)[2])
	claim := decode[session.InboxSplicedData](t, evs[i+1])
	if ins.Target != session.InboxNextStep || claim.Target != session.InboxNextStep || *claim.RemovedCount != 1 {
		t.Errorf("steer splices = %+v / %+v", ins, claim)
	}
	if got := userTexts(t, evs); !slices.Equal(got, []string{"start", "change course"}) {
		t.Errorf("user messages = %q", got)
	}
}

func testSteerDuringLastStep(t *testing.T) {
	s := newSession(t)
	release := make(chan struct{})
	a := newAgent(t, s, agent.Options{Model: gatedModel(release, "ok")})
	if _, err := a.Followup(userMsg("start")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, sStart, 1)
	if _, err := a.Steer(userMsg("also this")); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	if n := len(ofType(evs, sStart)); n != 2 {
		t.Errorf("%d steps, want 2", n)
	}
	if n := len(ofType(evs, tStart)); n != 1 {
		t.Errorf("%d turns, want 1", n)
	}
	if got := userTexts(t, evs); !slices.Equal(got, []string{"start", "also this"}) {
		t.Errorf("user messages = %q", got)
	}
}

func testIdleSteerIsFollowup(t *testing.T) {
	s := newSession(t)
	a := newAgent(t, s, agent.Options{Model: mustScript(t, "model:\n  main:\n    - text: ok\n")})
	if _, err := a.Steer(userMsg("hello")); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	if d := decode[session.InboxSplicedData](t, evs[0]); d.Target != session.InboxNextTurn {
		t.Errorf("idle steer target = %q", d.Target)
	}
	if got := turnEnds(t, evs); len(got) != 1 || got[0].Kind != session.TurnEndCompleted {
		t.Errorf("turn ends = %+v", got)
	}
}

func TestFollowupsRunAsFIFOTurns(t *testing.T) {
	s := newSession(t)
	release := make(chan struct{})
	calls := 0
	m := modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
		calls++
		if calls == 1 {
			return gatedModel(release, "r1").Stream(ctx, req)
		}
		return func(yield func(session.Chunk, error) bool) {
			yield(session.Chunk{Type: session.ChunkText, Text: "r"}, nil)
		}
	})
	a := newAgent(t, s, agent.Options{Model: m})
	for _, p := range []string{"A", "B", "C"} {
		if _, err := a.Followup(userMsg(p)); err != nil {
			t.Fatal(err)
		}
	}
	if a.Status() != agent.StatusRunning {
		t.Errorf("status = %s, want running", a.Status())
	}
	close(release)
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.Status() != agent.StatusIdle {
		t.Errorf("status = %s, want idle", a.Status())
	}
	evs := s.MustEvents()
	if got := userTexts(t, evs); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Errorf("user messages = %q", got)
	}
	if got := turnEnds(t, evs); len(got) != 3 {
		t.Errorf("%d turns, want 3", len(got))
	}
	// Each turn claims exactly one message from the front of the queue.
	for _, ev := range ofType(evs, splice) {
		d := decode[session.InboxSplicedData](t, ev)
		if d.RemovedCount != nil && (*d.RemovedCount != 1 || d.Start != 0) {
			t.Errorf("claim = %+v", d)
		}
	}
}

func TestInjectRecordedWithoutWake(t *testing.T) {
	s := newSession(t)
	rec := &recorder{inner: mustScript(t, "model:\n  main:\n    - text: ok\n")}
	a := newAgent(t, s, agent.Options{Model: rec})
	if _, err := a.Inject(session.Message{Content: []session.Block{session.Text("quiet note")},
		Source: session.Source{Kind: session.SourceSubagentReport, Form: "relay", SenderSessionID: "kid"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := types(s.MustEvents()); !slices.Equal(got, []string{splice}) || a.Status() != agent.StatusIdle {
		t.Fatalf("after inject: events %q status %s, want only the insert splice and idle", got, a.Status())
	}
	if _, err := a.Prompt(t.Context(), userMsg("wake up now")); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	claim := decode[session.InboxSplicedData](t, evs[3])
	if claim.RemovedCount == nil || *claim.RemovedCount != 2 {
		t.Errorf("claim = %+v, want removedCount 2", claim)
	}
	if got := userTexts(t, evs); !slices.Equal(got, []string{"quiet note", "wake up now"}) {
		t.Errorf("user messages = %q", got)
	}
	// The title comes from the first human message, not the injected report.
	if td := decode[session.TitleData](t, ofType(evs, title)[0]); td.Title != "wake up now" {
		t.Errorf("title = %q", td.Title)
	}
	// Consecutive user messages reach the model as one (model.FromSurface).
	if msgs := rec.requests()[0].Messages; len(msgs) != 1 || session.JoinText(msgs[0].Content, "|") != "quiet note|wake up now" {
		t.Errorf("request messages = %+v, want one user message with both texts", msgs)
	}
}

func TestCancelDuringHangingModelCall(t *testing.T) {
	const hang = "model:\n  main:\n    - text: partial answer\n      hang: true\n"
	tests := []struct {
		name   string
		cancel func(a *agent.Agent, cancelPrompt context.CancelFunc)
		want   session.AbortReason
	}{
		{"prompt context", func(_ *agent.Agent, c context.CancelFunc) { c() }, session.AbortReason{Kind: "user"}},
		{"cancel parent", func(a *agent.Agent, _ context.CancelFunc) {
			a.Cancel(session.AbortReason{Kind: "parent"}, false)
		}, session.AbortReason{Kind: "parent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			var cause error
			m := modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
				inner := mustScript(t, hang).Stream(ctx, req)
				return func(yield func(session.Chunk, error) bool) {
					defer func() { cause = context.Cause(ctx) }()
					for c, err := range inner {
						if !yield(c, err) {
							return
						}
					}
				}
			})
			a := newAgent(t, s, agent.Options{Model: m})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				waitEvent(t, s, chunk, 2)
				tt.cancel(a, cancel)
			}()
			res, err := a.Prompt(ctx, userMsg("do long work"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason.Kind != session.TurnEndAborted || *res.Reason.Reason != tt.want {
				t.Fatalf("result = %+v, want aborted %+v", res.Reason, tt.want)
			}
			if got := session.JoinText(res.Output, ""); got != "partial answer" {
				t.Errorf("output = %q, want the partial text", got)
			}
			if err := a.WaitIdle(t.Context()); err != nil {
				t.Fatal(err)
			}
			var ae *agent.AbortError
			if !errors.As(cause, &ae) || ae.Reason != tt.want {
				t.Errorf("model saw cause %v, want %+v", cause, tt.want)
			}
			evs := s.MustEvents()
			tail := types(evs[len(evs)-4:])
			if want := []string{chunk, amsg, sEnd, tEnd}; !slices.Equal(tail, want) {
				t.Fatalf("tail %q, want %q", tail, want)
			}
			d := decode[session.AssistantMessageData](t, evs[len(evs)-3])
			if !d.Interrupted || session.JoinText(d.Message.Content, "") != "partial answer" {
				t.Errorf("partial message = %+v", d)
			}
		})
	}
}

func TestCancelClosesRunningToolCall(t *testing.T) {
	s := newSession(t)
	started := make(chan struct{})
	slow := funcTool{
		spec: model.ToolSpec{Name: "slow", Parameters: json.RawMessage(`{"type":"object"}`)},
		fn: func(ctx context.Context, _ tool.Invocation) (tool.Result, error) {
			close(started)
			<-ctx.Done()
			return tool.Result{}, context.Cause(ctx)
		},
	}
	a := newAgent(t, s, agent.Options{Tools: registry(t, slow, echoTool()), Model: mustScript(t, `model:
  main:
    - tool_calls:
        - {id: s1, name: slow, arguments: '{}'}
        - {id: e1, name: echo, arguments: '{"text":"never"}'}
`)})
	if _, err := a.Followup(userMsg("go")); err != nil {
		t.Fatal(err)
	}
	<-started
	a.Cancel(session.AbortReason{Kind: "user"}, false)
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	tail := types(evs[len(evs)-6:])
	if want := []string{tcall, tresult, tcall, tresult, sEnd, tEnd}; !slices.Equal(tail, want) {
		t.Fatalf("tail %q, want %q", tail, want)
	}
	results := ofType(evs, tresult)
	for i, want := range []struct{ text, code string }{
		{"Error: tool call aborted", tool.CodeAborted},
		{"Error: tool call aborted before dispatch", tool.CodeAbortedBeforeStart},
	} {
		d := decode[session.ToolResultData](t, results[i])
		b := d.Message.Content[0]
		if !b.IsError || session.JoinText(b.Content, "") != want.text || d.Error == nil || d.Error.Code != want.code {
			t.Errorf("result %d = %+v (error %+v), want %q %s", i, b, d.Error, want.text, want.code)
		}
	}
	if r := turnEnds(t, evs); r[0].Kind != session.TurnEndAborted || r[0].Reason.Kind != "user" {
		t.Errorf("turn end = %+v", r[0])
	}
}

func TestCancelInbox(t *testing.T) {
	t.Run("keepInbox parks until a waking send", testCancelKeepInbox)
	t.Run("drop records canceled splices", testCancelDropRecordsSplices)
}

const cancelScript = `model:
  main:
    - text: working on it
      hang: true
    - text: did B
    - text: did C
    - text: did D
`

func testCancelKeepInbox(t *testing.T) {
	s := newSession(t)
	var idles int
	a := newAgent(t, s, agent.Options{Model: mustScript(t, cancelScript), OnIdle: func(*agent.Agent) { idles++ }})
	if _, err := a.Followup(userMsg("long work")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, chunk, 1)
	for _, p := range []string{"parked B", "parked C"} {
		if _, err := a.Followup(userMsg(p)); err != nil {
			t.Fatal(err)
		}
	}
	a.Cancel(session.AbortReason{Kind: "user"}, true)
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.ParkedCount() != 2 || a.Status() != agent.StatusIdle {
		t.Fatalf("parked %d status %s, want 2 idle", a.ParkedCount(), a.Status())
	}
	if n := len(ofType(s.MustEvents(), tStart)); n != 1 {
		t.Fatalf("%d turns before waking, want 1 (parked items must not run)", n)
	}
	if _, err := a.Inject(userMsg("injected")); err != nil { // does not wake
		t.Fatal(err)
	}
	if a.ParkedCount() != 3 {
		t.Errorf("parked %d after inject, want 3", a.ParkedCount())
	}
	if _, err := a.Followup(userMsg("waking D")); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	if got, want := userTexts(t, evs), []string{"long work", "parked B", "parked C", "injected", "waking D"}; !slices.Equal(got, want) {
		t.Errorf("user messages = %q, want %q", got, want)
	}
	var kinds []string
	for _, r := range turnEnds(t, evs) {
		kinds = append(kinds, r.Kind)
	}
	if want := []string{"aborted", "completed", "completed", "completed"}; !slices.Equal(kinds, want) {
		t.Errorf("turn ends = %q, want %q", kinds, want)
	}
	if a.ParkedCount() != 0 || idles != 2 {
		t.Errorf("parked %d, OnIdle calls %d; want 0 and 2", a.ParkedCount(), idles)
	}
}

func testCancelDropRecordsSplices(t *testing.T) {
	s := newSession(t)
	a := newAgent(t, s, agent.Options{Model: mustScript(t, cancelScript)})
	if _, err := a.Followup(userMsg("long work")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, chunk, 1)
	waiter := make(chan agent.TurnResult, 1)
	go func() {
		r, _ := a.Prompt(t.Context(), userMsg("queued B"))
		waiter <- r
	}()
	waitEvent(t, s, splice, 3)
	if _, err := a.Followup(userMsg("queued C")); err != nil {
		t.Fatal(err)
	}
	a.Cancel(session.AbortReason{Kind: "parent"}, false)
	if r := <-waiter; r.Reason.Kind != session.TurnEndAborted || r.Reason.Reason.Kind != "parent" || r.Turn != 0 {
		t.Errorf("dropped prompt result = %+v", r)
	}
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	var drop *session.InboxSplicedData
	for _, ev := range ofType(evs, splice) {
		if d := decode[session.InboxSplicedData](t, ev); d.Outcome == "canceled" {
			drop = &d
		}
	}
	if drop == nil || *drop.RemovedCount != 2 || drop.Start != 0 || drop.Target != session.InboxNextTurn {
		t.Fatalf("drop splice = %+v", drop)
	}
	if got := userTexts(t, evs); !slices.Equal(got, []string{"long work"}) {
		t.Errorf("user messages = %q", got)
	}
	if a.ParkedCount() != 0 {
		t.Errorf("parked = %d", a.ParkedCount())
	}
}

func TestPromptContextWithdrawsQueuedMessage(t *testing.T) {
	s := newSession(t)
	release := make(chan struct{})
	a := newAgent(t, s, agent.Options{Model: gatedModel(release, "done")})
	if _, err := a.Followup(userMsg("first")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, sStart, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := a.Prompt(ctx, userMsg("second"))
	if err != nil || res.Reason.Kind != session.TurnEndAborted || res.Reason.Reason.Kind != "user" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	close(release)
	if err := a.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := s.MustEvents()
	if got := userTexts(t, evs); !slices.Equal(got, []string{"first"}) {
		t.Errorf("user messages = %q", got)
	}
	last := decode[session.InboxSplicedData](t, ofType(evs, splice)[3])
	if last.Outcome != "canceled" || *last.RemovedCount != 1 || last.Start != 0 {
		t.Errorf("withdrawal splice = %+v", last)
	}
}

func TestTurnEndReasons(t *testing.T) {
	loop := "model:\n  main:\n" + strings.Repeat("    - tool_calls: [{name: echo, arguments: '{\"text\":\"again\"}'}]\n", 5)
	tests := []struct {
		name     string
		script   string
		maxSteps int
		want     session.TurnEndReason
		steps    int
		check    func(t *testing.T, evs []session.Event)
	}{
		{name: "step limit", script: loop, maxSteps: 2,
			want: session.TurnEndReason{Kind: session.TurnEndMaxSteps}, steps: 2},
		{name: "max tokens", script: "model:\n  main:\n    - {text: cut, finish: length}\n",
			want: session.TurnEndReason{Kind: session.TurnEndMaxTokens}, steps: 1},
		{name: "max tokens with a tool call", steps: 1,
			script: "model:\n  main:\n    - text: partial one\n      tool_calls: [{id: t1, name: echo, arguments: '{\"text\":\"x\"}'}]\n      finish: length\n",
			want:   session.TurnEndReason{Kind: session.TurnEndMaxTokens},
			check: func(t *testing.T, evs []session.Event) {
				d := decode[session.ToolResultData](t, ofType(evs, tresult)[0])
				if d.Error == nil || d.Error.Code != tool.CodeToolNotStarted || !d.Message.Content[0].IsError {
					t.Errorf("cut-off call result = %+v", d)
				}
				out := agent.FinalOutput(evs)
				if len(out) != 2 || out[0].Text != "partial one" || out[1].Type != session.BlockToolCall {
					t.Errorf("output = %+v", out)
				}
			}},
		{name: "content filter", script: "model:\n  main:\n    - {text: no, finish: content-filter}\n",
			want: session.TurnEndReason{Kind: session.TurnEndBlocked}, steps: 1},
		{name: "model error before chunks", script: "model:\n  main:\n    - error: provider exploded\n",
			want: session.TurnEndReason{Kind: session.TurnEndError, Error: &session.ErrorInfo{Message: "provider exploded", Code: agent.CodeModelFailed}}, steps: 1,
			check: func(t *testing.T, evs []session.Event) {
				if n := len(ofType(evs, amsg)); n != 0 {
					t.Errorf("%d assistant messages, want 0", n)
				}
			}},
		{name: "model error after chunks", script: "model:\n  main:\n    - {text: half way, error: stream broke, error_after_chunks: true}\n",
			want: session.TurnEndReason{Kind: session.TurnEndError, Error: &session.ErrorInfo{Message: "stream broke", Code: agent.CodeModelFailed}}, steps: 1,
			check: func(t *testing.T, evs []session.Event) {
				d := decode[session.AssistantMessageData](t, ofType(evs, amsg)[0])
				if !d.Interrupted || session.JoinText(d.Message.Content, "") != "half way" {
					t.Errorf("partial message = %+v", d)
				}
			}},
		{name: "script mismatch", script: "model:\n  other:\n    - text: x\n",
			want: session.TurnEndReason{Kind: session.TurnEndError, Error: &session.ErrorInfo{
				Message: `scripted model: no replies for script key "main" (call index 0) and no "*" fallback`, Code: "SCRIPT_MISMATCH"}}, steps: 1},
		{name: "fallback key", script: "model:\n  \"*\":\n    - text: any\n",
			want: session.TurnEndReason{Kind: session.TurnEndCompleted}, steps: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			a := newAgent(t, s, agent.Options{Model: mustScript(t, tt.script), Tools: registry(t, echoTool()), MaxSteps: tt.maxSteps})
			res, err := a.Prompt(t.Context(), userMsg("go"))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(res.Reason)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("reason = %s, want %s", got, want)
			}
			evs := s.MustEvents()
			if n := len(ofType(evs, sStart)); n != tt.steps || len(ofType(evs, sEnd)) != n {
				t.Errorf("%d step/start, %d step/end; want %d each", n, len(ofType(evs, sEnd)), tt.steps)
			}
			if evs[len(evs)-1].Type != tEnd || evs[len(evs)-2].Type != sEnd {
				t.Errorf("log does not end with step/end, turn/end: %q", types(evs[len(evs)-2:]))
			}
			if tt.check != nil {
				tt.check(t, evs)
			}
		})
	}
}

func TestToolFailuresAreResultsTheModelSees(t *testing.T) {
	panicky := funcTool{
		spec: model.ToolSpec{Name: "boom", Parameters: json.RawMessage(`{"type":"object"}`)},
		fn:   func(context.Context, tool.Invocation) (tool.Result, error) { panic("kaboom") },
	}
	failing := funcTool{
		spec: model.ToolSpec{Name: "fail", Parameters: json.RawMessage(`{"type":"object"}`)},
		fn: func(context.Context, tool.Invocation) (tool.Result, error) {
			return tool.Result{}, &tool.Error{Code: "CUSTOM", Message: "it broke"}
		},
	}
	tests := []struct {
		name, call string
		text, code string
	}{
		{"invalid arguments", `{name: echo, arguments: '{"text": 7}'}`, "Error: invalid arguments: at '/text': got number, want string", tool.CodeInvalidArgs},
		{"missing argument", `{name: echo, arguments: '{}'}`, "Error: invalid arguments: missing property 'text'", tool.CodeInvalidArgs},
		{"malformed JSON", `{name: echo, arguments: '{"text":'}`, "", tool.CodeInvalidArgs},
		{"panic", `{name: boom, arguments: '{}'}`, `Error: tool "boom" panicked: kaboom`, tool.CodeToolPanicked},
		{"unknown tool", `{name: nope, arguments: '{}'}`, `Error: unknown tool "nope"`, tool.CodeUnknownTool},
		{"tool error", `{name: fail, arguments: '{}'}`, "Error: it broke", "CUSTOM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			rec := &recorder{inner: mustScript(t, "model:\n  main:\n    - tool_calls: ["+tt.call+"]\n    - text: noted\n")}
			a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t, echoTool(), panicky, failing)})
			res, err := a.Prompt(t.Context(), userMsg("go"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason.Kind != session.TurnEndCompleted {
				t.Fatalf("turn ended %+v, want completed", res.Reason)
			}
			d := decode[session.ToolResultData](t, ofType(s.MustEvents(), tresult)[0])
			if d.Error == nil || d.Error.Code != tt.code {
				t.Errorf("error info = %+v, want code %s", d.Error, tt.code)
			}
			reqs := rec.requests()
			last := reqs[len(reqs)-1].Messages
			seen := last[len(last)-1]
			if seen.Role != model.RoleTool || len(seen.Content) != 1 || !seen.Content[0].IsError {
				t.Fatalf("model saw %+v, want an isError tool result", seen)
			}
			text := session.JoinText(seen.Content[0].Content, "")
			if tt.text != "" && text != tt.text {
				t.Errorf("model saw %q, want %q", text, tt.text)
			}
			if !strings.HasPrefix(text, "Error: ") {
				t.Errorf("model saw %q, want an Error: prefix", text)
			}
		})
	}
}

func TestPreStepHooks(t *testing.T) {
	type call struct {
		turn, step int
		first      bool
	}
	tests := []struct {
		name      string
		decisions []agent.Decision
		err       error
		want      []string // turn end kinds of two prompts
		calls     []call
	}{
		{"reject then enter", []agent.Decision{agent.Reject, agent.Enter, agent.Enter},
			// The rejected step consumed script index 0, so turn 2 gets the text reply.
			nil, []string{"blocked", "completed"}, []call{{1, 1, true}, {2, 1, true}}},
		{"enter always", []agent.Decision{agent.Enter, agent.Enter, agent.Enter},
			nil, []string{"completed", "completed"}, []call{{1, 1, true}, {1, 2, false}, {2, 1, false}}},
		{"hook error", nil, errTest, []string{"error", "error"}, []call{{1, 1, true}, {2, 1, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			var calls []call
			hook := func(ctx context.Context, a *agent.Agent, st agent.StepInfo) (agent.Decision, error) {
				calls = append(calls, call{st.Turn, st.Step, st.FirstEnter})
				if tt.err != nil {
					return agent.Enter, tt.err
				}
				return tt.decisions[len(calls)-1], nil
			}
			script := `model:
  "*":
    - tool_calls: [{name: echo, arguments: '{"text":"a"}'}]
    - text: one
    - text: two
`
			a := newAgent(t, s, agent.Options{Model: mustScript(t, script), Tools: registry(t, echoTool()),
				PreStep: []agent.PreStepHook{hook}})
			var kinds []string
			for _, p := range []string{"p1", "p2"} {
				res, err := a.Prompt(t.Context(), userMsg(p))
				if err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, res.Reason.Kind)
				if res.Reason.Kind == "error" && (res.Reason.Error.Code != agent.CodeHookFailed || res.Reason.Error.Message != errTest.Error()) {
					t.Errorf("hook error reason = %+v", res.Reason.Error)
				}
			}
			if !slices.Equal(kinds, tt.want) {
				t.Errorf("turn ends = %q, want %q", kinds, tt.want)
			}
			if !slices.Equal(calls, tt.calls) {
				t.Errorf("hook calls = %+v, want %+v", calls, tt.calls)
			}
			// A rejected step never reaches the model.
			evs := s.MustEvents()
			first := evs[:slices.Index(types(evs), tEnd)+1]
			if tt.want[0] != "completed" && len(ofType(first, chunk)) != 0 {
				t.Errorf("rejected turn called the model")
			}
		})
	}
}

func TestSubscribersSeeEventsAndProgressInOrder(t *testing.T) {
	s := newSession(t)
	progressing := funcTool{
		spec: model.ToolSpec{Name: "prog", Parameters: json.RawMessage(`{"type":"object"}`)},
		fn: func(_ context.Context, inv tool.Invocation) (tool.Result, error) {
			inv.Progress(tool.Progress{Text: "halfway"})
			if inv.Caller.SessionID() != s.ID() {
				return tool.Result{}, errors.New("wrong caller")
			}
			return tool.TextResult("done", nil), nil
		},
	}
	a := newAgent(t, s, agent.Options{Tools: registry(t, progressing), Model: mustScript(t, `model:
  main:
    - tool_calls: [{id: p1, name: prog, arguments: '{}'}]
    - text: fin
`)})
	var got []string
	var statuses []agent.Status
	unsub := a.Subscribe(func(u agent.Update) {
		switch {
		case u.Event != nil:
			got = append(got, u.Event.Type)
			statuses = append(statuses, a.Status())
		case u.Progress != nil:
			got = append(got, "progress:"+u.Progress.CallID+":"+u.Progress.Text)
		}
	})
	if _, err := a.Prompt(t.Context(), userMsg("go")); err != nil {
		t.Fatal(err)
	}
	unsub()
	unsub()
	i := slices.Index(got, tcall)
	if i < 0 || got[i+1] != "progress:p1:halfway" || got[i+2] != tresult {
		t.Errorf("progress not between tool/call and tool/result: %q", got)
	}
	var evTypes []string
	for _, g := range got {
		if !strings.HasPrefix(g, "progress:") {
			evTypes = append(evTypes, g)
		}
	}
	if !slices.Equal(evTypes, types(s.MustEvents())) {
		t.Errorf("subscriber events %q\ndiffer from the log %q", evTypes, types(s.MustEvents()))
	}
	if statuses[1] != agent.StatusRunning {
		t.Errorf("status during the turn = %s", statuses[1])
	}
	n := len(got)
	if _, err := a.Prompt(t.Context(), userMsg("again")); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("unsubscribed fn still called: %q", got[n:])
	}
}

func TestCloseIsIdempotentAndDisposes(t *testing.T) {
	s := newSession(t)
	a := agent.New(s, agent.Options{Model: mustScript(t, "model:\n  main:\n    - {text: forever, hang: true}\n")})
	if _, err := a.Followup(userMsg("work")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, chunk, 1)
	if _, err := a.Followup(userMsg("queued")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Followup(userMsg("late")); !errors.Is(err, agent.ErrClosed) {
		t.Errorf("Followup after Close = %v, want ErrClosed", err)
	}
	if _, err := a.Prompt(t.Context(), userMsg("late")); !errors.Is(err, agent.ErrClosed) {
		t.Errorf("Prompt after Close = %v, want ErrClosed", err)
	}
	evs := s.MustEvents()
	r := turnEnds(t, evs)
	if len(r) != 1 || r[0].Kind != "aborted" || r[0].Reason.Kind != "disposed" {
		t.Errorf("turn ends = %+v, want one aborted {disposed}", r)
	}
	if got := decode[session.InboxSplicedData](t, ofType(evs, splice)[3]); got.Outcome != "canceled" {
		t.Errorf("queued item not canceled: %+v", got)
	}
	if a.Status() != agent.StatusIdle {
		t.Errorf("status after close = %s", a.Status())
	}
	// Closing an agent that never ran needs no goroutine.
	b := agent.New(newSession(t), agent.Options{})
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestNoModelConfigured(t *testing.T) {
	a := newAgent(t, newSession(t), agent.Options{})
	res, err := a.Prompt(t.Context(), userMsg("x"))
	if err != nil || res.Reason.Kind != "error" || res.Reason.Error.Code != agent.CodeModelNotConfigured {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
}

func TestRegistry(t *testing.T) {
	var r agent.Registry
	a1 := agent.New(newSession(t), agent.Options{})
	s2 := newSession(t) // same deterministic id as a1's session: a fresh store
	a2 := agent.New(s2, agent.Options{})
	if err := r.Register(a1); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(a1); err != nil {
		t.Errorf("re-register: %v", err)
	}
	if err := r.Register(a2); !errors.Is(err, agent.ErrAlreadyRegistered) {
		t.Errorf("duplicate id: %v", err)
	}
	if r.Unregister(a2) {
		t.Error("Unregister removed a different agent with the same id")
	}
	if got, ok := r.Get(a1.ID()); !ok || got != a1 {
		t.Error("Get lost a1")
	}
	if l := r.List(); len(l) != 1 || l[0] != a1 {
		t.Errorf("List = %v", l)
	}
	if !r.Unregister(a1) {
		t.Error("Unregister(a1) = false")
	}
	if _, ok := r.Get(a1.ID()); ok {
		t.Error("a1 still registered")
	}
}
