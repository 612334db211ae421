package subagent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// writeAgents writes agent files into dir/.acp-agent/agents and loads them.
func writeAgents(t *testing.T, dir string, files map[string]string) *agentdef.Set {
	t.Helper()
	agents := filepath.Join(dir, ".acp-agent", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(agents, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := agentdef.Load(agentdef.Options{Cwd: dir})
	for _, p := range set.Problems {
		t.Fatalf("problem: %s", p)
	}
	return set
}

const reviewerV1 = "---\ndescription: Reviews changes\ntools: [send_message, report]\nmodel: other/reviewer-model\nmaxTurns: 3\n---\nYou are the reviewer, version one.\n"
const reviewerV2 = "---\ndescription: Reviews changes\ntools: [report]\nmodel: other/new-model\nmaxTurns: 9\n---\nYou are the reviewer, version two.\n"

func invoke(t *testing.T, d tool.Tool, caller *agent.Agent, args any) (tool.Result, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	return d.Execute(testCtx(t), tool.Invocation{CallID: "c", Name: "subagent", Arguments: raw, Caller: caller})
}

// A call naming an agent starts the child with the definition's tool
// filter, persona, route and turn limit, records the definition, and a
// cold resume after the file changed keeps what the child started with.
func TestAgentDefinitionStartsTheChildAndColdResumeKeepsIt(t *testing.T) {
	ctx := testCtx(t)
	var specs []subagent.ChildSpec
	st, ps, _, _ := faultStack(t, newScript().text("review it", "one", "two").model(), func(c *subagenttest.Config) {
		c.WrapFactory = func(next subagent.AgentFactory) subagent.AgentFactory {
			return func(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
				specs = append(specs, spec)
				return next(s, spec)
			}
		}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	dir := t.TempDir()
	set := writeAgents(t, dir, map[string]string{"reviewer.md": reviewerV1})
	def, _ := set.Get("reviewer")
	d := subagent.NewSubagentToolWith(st.Runtime, &subagent.AgentChoices{Set: set})
	res, err := invoke(t, d, parent, map[string]any{"description": "review it", "prompt": "review", "agent": "reviewer"})
	if err != nil || res.IsError {
		t.Fatalf("start: %v %+v", err, res)
	}
	childID, _, _ := strings.Cut(strings.TrimPrefix(session.JoinText(res.Content, ""), "started subagent "), " ")
	if text := session.JoinText(res.Content, ""); !strings.HasSuffix(text, " on model other/reviewer-model") {
		t.Errorf("the start does not say which model the child runs on: %q", text)
	}
	lc.waitEnds(t, ctx, childID, 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, childID)
	wantDesc := `{"version":2,"mode":"continuable","provider":"spawn","label":"review it","agentProvider":"other","agentModel":"reviewer-model","persona":"You are the reviewer, version one.","toolFilter":{"allow":["send_message","report"]},"callId":"c"}`
	if got := string(evs[indexOf(evs, session.TypeDescriptor)].Data); got != wantDesc {
		t.Errorf("descriptor = %s\nwant %s", got, wantDesc)
	}
	i := indexOf(evs, subagent.TypeDefinition)
	if i != indexOf(evs, session.TypeDescriptor)+1 || !evs[i].Ignorable {
		t.Fatalf("definition record at %d (ignorable %v); want right after the descriptor", i, i >= 0 && evs[i].Ignorable)
	}
	wantRec := fmt.Sprintf(`{"name":"reviewer","hash":%q,"file":%q,"format":"acp-agent","scope":"project","mode":"background","maxTurns":3,"isolation":"none"}`, def.Hash, def.File)
	if got := string(evs[i].Data); got != wantRec {
		t.Errorf("definition record = %s\nwant %s", got, wantRec)
	}
	if len(specs) != 1 || specs[0].MaxSteps != 3 || specs[0].Definition == nil || specs[0].Definition.Hash != def.Hash {
		t.Fatalf("start spec = %+v", specs)
	}
	reqs := st.Model.(*subagenttest.FuncModel).Requests("review it")
	if len(reqs) != 1 || reqs[0].Route != (model.Route{Provider: "other", Model: "reviewer-model"}) {
		t.Errorf("child requests = %+v", reqs)
	}

	// The file changes (and could as well be deleted); a cold resume
	// rebuilds the child from its log.
	writeAgents(t, dir, map[string]string{"reviewer.md": reviewerV2})
	if _, err := st.Runtime.Followup(ctx, parent, childID, text("again")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, childID, 2)
	if len(specs) != 2 || specs[1].Fresh {
		t.Fatalf("specs = %+v", specs)
	}
	r := specs[1]
	if r.MaxSteps != 3 || r.Persona != "You are the reviewer, version one." || r.Route != (model.Route{Provider: "other", Model: "reviewer-model"}) ||
		r.ToolFilter == nil || strings.Join(r.ToolFilter.Allow, ",") != "send_message,report" || r.Definition == nil || r.Definition.Hash != def.Hash {
		t.Errorf("resume spec = %+v (definition %+v)", r, r.Definition)
	}
	_, evs = persistedEvents(t, ctx, durable{ps}, childID)
	if n := subagenttest.Count(evs, subagent.TypeDefinition); n != 1 {
		t.Errorf("%d definition records; a resume must not append another", n)
	}
}

func TestAgentParameterErrorsAndDescription(t *testing.T) {
	st, _, _, _ := faultStack(t, newScript().model(), nil)
	parent := st.NewParent(t, "parent")
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 25 {
		files[fmt.Sprintf("a%02d.md", i)] = fmt.Sprintf("---\ndescription: agent %d\n---\n", i)
	}
	files["fg.md"] = "---\ndescription: in front\nmode: foreground\n---\n"
	set := writeAgents(t, dir, files)
	refuse := errors.New(`agent "a01" asks for what the settings deny`)
	d := subagent.NewSubagentToolWith(st.Runtime, &subagent.AgentChoices{Set: set, Check: func(def *agentdef.Definition) error {
		if def.Name == "a01" {
			return refuse
		}
		return nil
	}})
	if got := strings.Join(schemaKeys(t, d), ","); got != "agent,description,isolation,maxCostUsd,maxTokens,maxTurns,prompt,run_in_background,timeout" {
		t.Errorf("keys = %s", got)
	}
	desc := d.Spec().Description
	for _, want := range []string{"- a00: agent 0\n", "- a19: agent 19\n(6 more agents are defined but not listed here: a20, a21, a22, a23, a24, fg)"} {
		if !strings.Contains(desc, want) {
			t.Errorf("description lacks %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "- a20:") {
		t.Error("description lists more than the cap")
	}
	_, err := invoke(t, d, parent, map[string]any{"description": "x", "prompt": "p", "agent": "nobody"})
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != subagent.CodeUnknownAgent || !strings.Contains(te.Message, `unknown agent "nobody"; the defined agents are: a00, a01,`) || !strings.HasSuffix(te.Message, "a24, fg") {
		t.Errorf("unknown agent: %v", err)
	}
	_, err = invoke(t, d, parent, map[string]any{"description": "x", "prompt": "p", "agent": "a01"})
	if !errors.As(err, &te) || te.Code != subagent.CodeAgentRefused || !errors.Is(err, refuse) {
		t.Errorf("refused agent: %v", err)
	}
	plain := subagent.NewSubagentToolWith(st.Runtime, nil)
	if got := strings.Join(schemaKeys(t, plain), ","); got != "description,isolation,maxCostUsd,maxTokens,maxTurns,prompt,run_in_background,timeout" {
		t.Errorf("without definitions keys = %s", got)
	}
	_, err = invoke(t, plain, parent, map[string]any{"description": "x", "prompt": "p", "agent": "a00"})
	if !errors.As(err, &te) || te.Code != subagent.CodeUnknownAgent || !strings.Contains(te.Message, "no agents are defined here") {
		t.Errorf("agent without definitions: %v", err)
	}
}

// maxTurns ends the child's turn at its limit; the parent sees the
// max-turns stop reason (foreground: in the result; background: in the
// settlement).
func TestMaxTurnsEndsTheChildWithAStopReasonTheParentSees(t *testing.T) {
	ctx := testCtx(t)
	m := newScript().
		call("fg", "t1", "report", map[string]any{"output": "x"}).text("fg", "never reached").
		call("bg", "t2", "report", map[string]any{"output": "x"}).text("bg", "never reached").model()
	st, _, _, _ := faultStack(t, m, nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	set := writeAgents(t, t.TempDir(), map[string]string{
		"short.md":   "---\ndescription: one request per turn\nmode: foreground\nmaxTurns: 1\n---\n",
		"shortbg.md": "---\ndescription: one request per turn\nmaxTurns: 1\n---\n",
	})
	d := subagent.NewSubagentToolWith(st.Runtime, &subagent.AgentChoices{Set: set})
	res, err := invoke(t, d, parent, map[string]any{"description": "fg", "prompt": "p", "agent": "short"})
	if err != nil || !res.IsError || !strings.Contains(session.JoinText(res.Content, ""), "reached its turn limit (maxTurns)") {
		t.Errorf("foreground result = %+v, %v", res, err)
	}
	res, err = invoke(t, d, parent, map[string]any{"description": "bg", "prompt": "p", "agent": "shortbg"})
	if err != nil || res.IsError {
		t.Fatalf("background start = %+v, %v", res, err)
	}
	childID, _, _ := strings.Cut(strings.TrimPrefix(session.JoinText(res.Content, ""), "started subagent "), " ")
	ends := lc.waitEnds(t, ctx, childID, 1)
	if ends[0].StopReason != driver.StopMaxTurns {
		t.Errorf("background stop reason = %q, want %q", ends[0].StopReason, driver.StopMaxTurns)
	}
	if got := subagent.SettlementNotice(childID, driver.StopMaxTurns, nil).Content[0].Text; !strings.Contains(got, "reached its turn limit (maxTurns)") {
		t.Errorf("notice = %q", got)
	}
}

// permissionStack is durableStack recording the specs the factory builds
// children from.
func permissionStack(t *testing.T, dir string, m model.Model, specs *[]subagent.ChildSpec) (*subagenttest.Stack, *persistence.Store) {
	t.Helper()
	ps, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	st := subagenttest.New(t, subagenttest.Config{
		Model: m, Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}, SyncTo: ps.SyncTo,
		WrapFactory: func(next subagent.AgentFactory) subagent.AgentFactory {
			return func(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
				*specs = append(*specs, spec)
				return next(s, spec)
			}
		},
	})
	return st, ps
}

// A definition's permission mode is recorded in the child's descriptor
// (one-shot and continuable alike, with who wrote it), and a cold resume
// after a restart runs the child with the recorded mode, although the
// file now asks for another one and is then deleted.
func TestAgentPermissionModeIsRecordedAndSurvivesARestart(t *testing.T) {
	ctx := testCtx(t)
	data, proj := t.TempDir(), t.TempDir()
	sc := newScript().text("look", "looked").text("review it", "first", "second").text("main", "noted", "noted again")
	var specs []subagent.ChildSpec
	var childID string
	func() {
		st, ps := permissionStack(t, data, sc.model(), &specs)
		lc := record(st.Runtime)
		parent := st.NewParent(t, "parent")
		set := writeAgents(t, proj, map[string]string{
			"reviewer.md": "---\ndescription: Reviews\npermissionMode: plan\n---\nReview.\n",
			"looker.md":   "---\ndescription: Looks\nmode: foreground\npermissionMode: default\n---\n",
		})
		d := subagent.NewSubagentToolWith(st.Runtime, &subagent.AgentChoices{Set: set})
		res, err := invoke(t, d, parent, map[string]any{"description": "look", "prompt": "look", "agent": "looker"})
		if err != nil || res.IsError {
			t.Fatalf("foreground: %v %+v", err, res)
		}
		oneShot := specs[0]
		if oneShot.Mode != subagent.ModeOneShot || oneShot.PermissionMode != "default" || oneShot.PermissionScope != "project" {
			t.Errorf("one-shot spec mode %q scope %q", oneShot.PermissionMode, oneShot.PermissionScope)
		}
		res, err = invoke(t, d, parent, map[string]any{"description": "review it", "prompt": "review", "agent": "reviewer"})
		if err != nil || res.IsError {
			t.Fatalf("start: %v %+v", err, res)
		}
		childID, _, _ = strings.Cut(strings.TrimPrefix(session.JoinText(res.Content, ""), "started subagent "), " ")
		lc.waitEnds(t, ctx, childID, 1)
		waitIdle(t, ctx, parent)
		entries, err := durable{ps}.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var runID string
		for _, e := range entries {
			if id := e.Header.ID; id != childID && id != "parent" {
				runID = id
			}
		}
		_, evs := persistedEvents(t, ctx, durable{ps}, runID)
		if got, want := string(evs[indexOf(evs, session.TypeDescriptor)].Data),
			`{"version":2,"mode":"one-shot","provider":"spawn","label":"look","permissionMode":"default","permissionScope":"project","callId":"c"}`; got != want {
			t.Errorf("one-shot descriptor = %s\nwant %s", got, want)
		}
		st.Close()
		if err := st.Sessions.Remove("parent"); err != nil {
			t.Fatal(err)
		}
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	// The file now asks for accept-edits, then is gone: neither matters.
	writeAgents(t, proj, map[string]string{"reviewer.md": "---\ndescription: Reviews\npermissionMode: accept-edits\n---\n"})
	if err := os.Remove(filepath.Join(proj, ".acp-agent", "agents", "reviewer.md")); err != nil {
		t.Fatal(err)
	}
	specs = nil
	st, ps := permissionStack(t, data, sc.model(), &specs)
	lc := record(st.Runtime)
	reopenParent(t, st, ps, "parent")
	if _, err := st.Runtime.Followup(ctx, st.Live("parent"), childID, text("again")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, childID, 1)
	if len(specs) != 1 || specs[0].Fresh || specs[0].PermissionMode != "plan" || specs[0].PermissionScope != "project" {
		t.Fatalf("resume specs = %+v", specs)
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, childID)
	desc, err := subagent.FoldFirst(evs)
	if err != nil || desc == nil || desc.PermissionMode != "plan" || desc.PermissionScope != "project" {
		t.Fatalf("descriptor %+v, %v", desc, err)
	}
}
