package subagent_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

func schemaKeys(t *testing.T, tl tool.Tool) []string {
	t.Helper()
	var s struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(tl.Spec().Parameters, &s); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range s.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func call(t *testing.T, a *agent.Agent, name string, args any) tool.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	return a.Tools().Execute(testCtx(t), tool.Invocation{CallID: "t", Name: name, Arguments: raw, Caller: a})
}

func TestToolSchemasAndDescriptions(t *testing.T) {
	rt := subagent.New(subagent.Options{})
	tests := []struct {
		tool        tool.Tool
		keys        string
		contains    []string
		notContains []string
	}{
		{subagent.NewSendMessageTool(rt), "message,subagent_id", []string{"next turn"}, []string{"job_output", "job id"}},
		{subagent.NewInterruptTool(rt), "agent_id", []string{"current turn", "send_message"}, nil},
		{subagent.NewSubagentTool(rt), "description,isolation,maxCostUsd,maxTokens,maxTurns,prompt,run_in_background,timeout", []string{"send_message", "runs in the background by default"}, []string{"job_output", "job_kill"}},
		{subagent.NewForkTool(rt), "description,maxCostUsd,maxTokens,maxTurns,prompt,timeout", []string{"completed", "waits for the subagent"}, []string{"run_in_background"}},
		{subagent.NewReportTool(rt), "output", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Spec().Name, func(t *testing.T) {
			if got := strings.Join(schemaKeys(t, tt.tool), ","); got != tt.keys {
				t.Errorf("keys = %s, want %s", got, tt.keys)
			}
			desc := tt.tool.Spec().Description
			for _, s := range tt.contains {
				if !strings.Contains(desc, s) {
					t.Errorf("description lacks %q", s)
				}
			}
			for _, s := range tt.notContains {
				if strings.Contains(desc, s) {
					t.Errorf("description contains %q", s)
				}
			}
		})
	}
	if !strings.Contains(string(subagent.NewSubagentTool(rt).Spec().Parameters), "Defaults to true") {
		t.Error("run_in_background description lacks 'Defaults to true'")
	}
	sec := subagent.NewSubagentTool(rt).SystemPromptSection()
	if !strings.Contains(sec, "Use subagent in the background by default") || !strings.Contains(sec, "runtime sends you a notice containing its outcome") {
		t.Errorf("system prompt section = %q", sec)
	}
	if subagent.NewForkTool(rt).SystemPromptSection() != "" || subagent.NewSubagentTool(rt).Kind() != "think" {
		t.Error("fork section must be empty and delegation kind think")
	}
}

func TestSendMessageToASettledChildQueuesACoordinatorRelayTurn(t *testing.T) {
	ctx := testCtx(t)
	st, ps := durableStack(t, t.TempDir(), newScript().text("child", "one", "two").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	res := call(t, parent, "send_message", map[string]string{"subagent_id": id, "message": "and then?"})
	if res.IsError || toolText(res) != "message queued as the next turn for subagent "+id {
		t.Fatalf("result = %+v", res)
	}
	lc.waitEnds(t, ctx, id, 2)
	_, evs := persistedEvents(t, ctx, durable{ps}, id)
	msgs := userMessages(evs)
	if src := msgs[len(msgs)-1].Source; src != (session.Source{Kind: "coordinator", Form: "relay", SenderSessionID: "parent"}) {
		t.Errorf("source = %+v", src)
	}
}

func TestSendMessageFailures(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "ok").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	stranger := st.NewParent(t, "stranger")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	tests := []struct {
		name   string
		caller *agent.Agent
		id     string
		want   string
	}{
		{"unknown id", parent, "no-such-child", "unavailable"},
		{"another parent", stranger, id, "another parent session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, tt.caller, "send_message", map[string]string{"subagent_id": tt.id, "message": "hi"})
			if !res.IsError || !strings.Contains(toolText(res), tt.want) || !strings.HasPrefix(toolText(res), "Error: ") {
				t.Errorf("result = %+v", res)
			}
			if res.Error == nil || res.Error.Name != "SubagentError" {
				t.Errorf("error info = %+v", res.Error)
			}
		})
	}
	for _, tl := range []tool.Tool{subagent.NewSendMessageTool(st.Runtime), subagent.NewInterruptTool(st.Runtime), subagent.NewSubagentTool(st.Runtime)} {
		reg, _ := tool.NewRegistry(tl)
		res := reg.Execute(ctx, tool.Invocation{Name: tl.Spec().Name, Arguments: []byte(`{"subagent_id":"x","message":"y","agent_id":"x","description":"d","prompt":"p"}`)})
		if !res.IsError || !strings.Contains(toolText(res), "requires a calling agent") {
			t.Errorf("%s without caller: %+v", tl.Spec().Name, res)
		}
	}
}

func TestSendMessageMidTurnBecomesALaterTurn(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	st, ps := durableStack(t, t.TempDir(), newScript().add("child", g.reply("done")).text("child", "considered").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("long work"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if res := call(t, parent, "send_message", map[string]string{"subagent_id": id, "message": "also consider Y"}); res.IsError {
		t.Fatal(toolText(res))
	}
	g.open()
	lc.waitEnds(t, ctx, id, 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, id)
	if got := strings.Join(userTexts(evs, ""), "|"); got != "long work|also consider Y" {
		t.Errorf("user texts = %s", got)
	}
}

func TestInterruptAgentToolParksTheQueueAndWakesOnSendMessage(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	st, ps := durableStack(t, t.TempDir(), newScript().add("child", g.reply("never")).text("child", "parked done", "woken").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("long work"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if _, err := st.Runtime.Followup(ctx, parent, id, text("parked follow-up")); err != nil {
		t.Fatal(err)
	}
	res := call(t, parent, "interrupt_agent", map[string]string{"agent_id": id})
	if res.IsError || toolText(res) != "interrupt requested for agent "+id {
		t.Fatalf("result = %+v", res)
	}
	child := st.Live(id)
	waitIdle(t, ctx, child)
	if child.ParkedCount() != 1 || count(child.Session().MustEvents(), session.TypeStepStart) != 1 {
		t.Errorf("parked = %d, steps = %d", child.ParkedCount(), count(child.Session().MustEvents(), session.TypeStepStart))
	}
	if res := call(t, parent, "send_message", map[string]string{"subagent_id": id, "message": "wake up"}); res.IsError {
		t.Fatal(toolText(res))
	}
	lc.waitEnds(t, ctx, id, 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, id)
	if got := strings.Join(userTexts(evs, ""), "|"); got != "long work|parked follow-up|wake up" {
		t.Errorf("user texts = %s", got)
	}
	for _, ev := range evs {
		if ev.Type == session.TypeTurnEnd {
			d, _ := session.DecodeData[session.TurnEndData](ev)
			if d.Reason.Reason == nil || d.Reason.Reason.Kind != "parent" {
				t.Errorf("first turn end = %+v, want aborted by parent", d.Reason)
			}
			break
		}
	}
	for _, target := range []string{id, "no-such-agent"} {
		if res := call(t, parent, "interrupt_agent", map[string]string{"agent_id": target}); res.IsError || toolText(res) != "interrupt requested for agent "+target {
			t.Errorf("interrupting %s: %+v", target, res)
		}
	}
	if st.Runtime.Resident(id) {
		t.Error("interrupting a settled child rematerialized it")
	}
}

func TestSubagentToolStartsABackgroundContinuableChildByDefault(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("Reply with CHILD_OK", "CHILD_OK").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	var progress []tool.Progress
	raw, _ := json.Marshal(map[string]any{"description": "Reply with CHILD_OK", "prompt": "Reply with exactly the word CHILD_OK and nothing else."})
	res := parent.Tools().Execute(ctx, tool.Invocation{CallID: "call_bg_start", Name: "subagent", Arguments: raw, Caller: parent,
		Progress: func(p tool.Progress) { progress = append(progress, p) }})
	m := regexp.MustCompile(`^started subagent (\S+)$`).FindStringSubmatch(toolText(res))
	if res.IsError || m == nil {
		t.Fatalf("result = %+v", res)
	}
	ends := lc.waitEnds(t, ctx, m[1], 1)
	if session.JoinText(ends[0].LastAssistantMessage, "") != "CHILD_OK" {
		t.Errorf("end = %+v", ends[0])
	}
	if len(progress) != 1 {
		t.Fatalf("progress reports = %d, want 1: %+v", len(progress), progress)
	}
	meta := progress[0].Meta[subagent.ProgressMetaKey].(map[string]any)
	if meta["childSessionId"] != m[1] || meta["mode"] != "continuable" || meta["depth"] != 1 {
		t.Errorf("progress meta = %+v", meta)
	}
}

func TestSubagentToolForegroundResultsAndFailures(t *testing.T) {
	reject := func(ctx context.Context, a *agent.Agent, s agent.StepInfo) (agent.Decision, error) {
		if a.Options().ScriptKey == "refuse" {
			return agent.Reject, nil
		}
		return agent.Enter, nil
	}
	sc := newScript().text("answer", "continuable answer").
		add("cut", func(context.Context) ([]session.Chunk, error) { return subagenttest.Truncated("half"), nil })
	st := subagenttest.New(t, subagenttest.Config{Model: sc.model(), ChildPreStep: []agent.PreStepHook{reject}})
	parent := st.NewParent(t, "parent")
	tests := []struct {
		tool, label string
		background  any
		want        string
		isErr       bool
	}{
		{"subagent", "answer", false, "continuable answer", false},
		{"subagent", "cut", false, "Error: subagent run hit its token limit before finishing\nPartial output before the run ended:\nhalf", true},
		{"subagent", "refuse", false, "Error: subagent declined the task", true},
		{"subagent_fork", "x", true, "Error: run_in_background is disabled for this tool instance (enableRunInBackground: false)", true},
	}
	for _, tt := range tests {
		t.Run(tt.tool+"/"+tt.label, func(t *testing.T) {
			res := call(t, parent, tt.tool, map[string]any{"description": tt.label, "prompt": "go", "run_in_background": tt.background})
			if res.IsError != tt.isErr || toolText(res) != tt.want {
				t.Errorf("result = %q (error %v), want %q", toolText(res), res.IsError, tt.want)
			}
		})
	}
	if len(st.Agents.List()) != 1 {
		t.Error("foreground children were not disposed")
	}
}

func toolText(r tool.Result) string { return session.JoinText(r.Content, "") }
