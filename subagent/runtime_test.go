package subagent_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// stub is a provider with fixed behaviour.
type stub struct {
	name    string
	caps    driver.Capabilities
	starts  int
	req     driver.Request
	result  driver.Result
	runErr  error
	startFn func() (*driver.Run, error)
}

func (s *stub) Name() string                      { return s.name }
func (s *stub) Capabilities() driver.Capabilities { return s.caps }
func (s *stub) InheritsParentContext() bool       { return false }
func (s *stub) StartOneShot(ctx context.Context, host driver.Host, req driver.Request) (*driver.Run, error) {
	s.starts++
	s.req = req
	if s.startFn != nil {
		return s.startFn()
	}
	run := driver.NewRun("stub-child", nil, 1, nil)
	run.Settle(s.result, s.runErr)
	return run, nil
}

func TestProviderRegistryRegistersListsAndRemoves(t *testing.T) {
	st := subagenttest.New(t, subagenttest.Config{})
	lc := record(st.Runtime)
	unreg, err := st.Runtime.RegisterProvider(&stub{name: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Runtime.Providers(); !reflect.DeepEqual(got, []string{"spawn", "fork", "alpha"}) {
		t.Errorf("providers = %v", got)
	}
	if p, ok := st.Runtime.GetProvider("alpha"); !ok || p.Name() != "alpha" {
		t.Error("GetProvider(alpha) failed")
	}
	if _, err := st.Runtime.RegisterProvider(&stub{name: "alpha"}); !subagent.HasCode(err, subagent.CodeDuplicateProvider) ||
		err.Error() != `a subagent provider named "alpha" is already registered` {
		t.Errorf("duplicate: %v", err)
	}
	unreg()
	unreg()
	if _, ok := st.Runtime.GetProvider("alpha"); ok {
		t.Error("alpha still registered")
	}
	var kinds []string
	for _, ev := range lc.all() {
		kinds = append(kinds, ev.Type+":"+ev.Provider)
	}
	if got := strings.Join(kinds, ","); got != "subagent/provider-added:alpha,subagent/provider-removed:alpha" {
		t.Errorf("events = %s", got)
	}
}

func TestStartChecksBeforeCallingTheProvider(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{})
	parent := st.NewParent(t, "parent")
	if _, err := st.Runtime.Start(ctx, "missing", subagent.OneShotRequest{Parent: parent}); !subagent.HasCode(err, subagent.CodeNoProvider) ||
		err.Error() != `no subagent provider registered for "missing"` {
		t.Errorf("missing provider: %v", err)
	}
	bare := &stub{name: "bare"}
	unreg, _ := st.Runtime.RegisterProvider(bare)
	defer unreg()
	tests := []struct {
		name string
		req  subagent.OneShotRequest
		cap  string
	}{
		{"depth", subagent.OneShotRequest{MaxDepth: subagent.Depth(1)}, "depthLimit"},
		{"filter", subagent.OneShotRequest{ToolFilter: &subagent.ToolFilter{Deny: []string{"bash"}}}, "toolFilter"},
		{"persona", subagent.OneShotRequest{Persona: "reviewer"}, "persona"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Parent = parent
			_, err := st.Runtime.Start(ctx, "bare", tt.req)
			want := `subagent provider "bare" does not support the "` + tt.cap + `" capability`
			if !subagent.HasCode(err, subagent.CodeUnsupportedCapability) || err.Error() != want {
				t.Errorf("err = %v", err)
			}
		})
	}
	full := &stub{name: "full", caps: driver.Capabilities{DepthLimit: true, ToolFilter: true, Persona: true}}
	unreg2, _ := st.Runtime.RegisterProvider(full)
	defer unreg2()
	if _, err := st.Runtime.Start(ctx, "full", subagent.OneShotRequest{Parent: parent, MaxDepth: subagent.Depth(-1)}); err == nil ||
		!strings.Contains(err.Error(), "non-negative safe integer") {
		t.Errorf("negative depth: %v", err)
	}
	if bare.starts+full.starts != 0 {
		t.Error("a provider was called despite a failed check")
	}
}

func TestStartBindsTheOneShotDescriptorToTheChild(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{})
	parent := st.NewParent(t, "parent")
	tests := []struct{ label, want string }{
		{"", `{"version":2,"mode":"one-shot","provider":"spawn"}`},
		{"lbl", `{"version":2,"mode":"one-shot","provider":"spawn","label":"lbl"}`},
	}
	for _, tt := range tests {
		run, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Parent: parent, Label: tt.label, Prompt: text("x")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range run.LocalAgent.Session().MustEvents() {
			if ev.Type == session.TypeDescriptor {
				got = append(got, string(ev.Data))
			}
		}
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("label %q: descriptors = %v, want [%s]", tt.label, got, tt.want)
		}
		_ = run.Dispose(ctx)
	}
}

func TestOneShotLifecyclePairsStartBeforeEnd(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{})
	parent := st.NewParent(t, "parent")
	tests := []struct {
		name   string
		result driver.Result
		runErr error
		stop   string
		last   []session.Block
	}{
		{"completed", driver.Result{StopReason: "completed", Output: text("answer")}, nil, "completed", text("answer")},
		{"empty output", driver.Result{StopReason: "completed", Output: []session.Block{}}, nil, "completed", nil},
		{"transport failure", driver.Result{}, errors.New("transport"), "error", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &stub{name: "p-" + tt.name, result: tt.result, runErr: tt.runErr}
			unreg, _ := st.Runtime.RegisterProvider(p)
			defer unreg()
			lc := record(st.Runtime)
			run, err := st.Runtime.Start(ctx, p.name, subagent.OneShotRequest{Parent: parent})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := run.Result(ctx); !errors.Is(err, tt.runErr) {
				t.Errorf("result err = %v", err)
			}
			evs := lc.all()
			if len(evs) != 2 || evs[0].Type != subagent.EventStart || evs[1].Type != subagent.EventEnd || evs[0].RunID != evs[1].RunID {
				t.Fatalf("events = %+v", evs)
			}
			if evs[1].StopReason != tt.stop || !reflect.DeepEqual(evs[1].LastAssistantMessage, tt.last) || evs[1].ParentID != "parent" {
				t.Errorf("end = %+v", evs[1])
			}
		})
	}
	t.Run("distinct run ids for identical children", func(t *testing.T) {
		p := &stub{name: "twice", result: driver.Result{StopReason: "completed"}}
		unreg, _ := st.Runtime.RegisterProvider(p)
		defer unreg()
		lc := record(st.Runtime)
		for range 2 {
			if _, err := st.Runtime.Start(ctx, "twice", subagent.OneShotRequest{Parent: parent}); err != nil {
				t.Fatal(err)
			}
		}
		evs := lc.all()
		if len(evs) != 4 || evs[0].RunID == evs[2].RunID {
			t.Errorf("run ids not distinct: %+v", evs)
		}
	})
	t.Run("provider rejection emits nothing", func(t *testing.T) {
		p := &stub{name: "reject", startFn: func() (*driver.Run, error) { return nil, errors.New("setup rolled back") }}
		unreg, _ := st.Runtime.RegisterProvider(p)
		defer unreg()
		lc := record(st.Runtime)
		if _, err := st.Runtime.Start(ctx, "reject", subagent.OneShotRequest{Parent: parent}); err == nil {
			t.Fatal("start succeeded")
		}
		if evs := lc.all(); len(evs) != 0 {
			t.Errorf("events = %+v", evs)
		}
	})
}

func TestLifecycleListenerPanicsAreContained(t *testing.T) {
	st := subagenttest.New(t, subagenttest.Config{})
	st.Runtime.OnLifecycle(func(subagent.LifecycleEvent) { panic("sync boom") })
	lc := record(st.Runtime)
	unreg, err := st.Runtime.RegisterProvider(&stub{name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	unreg()
	if got := len(lc.all()); got != 2 {
		t.Errorf("later listener heard %d events, want 2", got)
	}
}

func TestSettlementNoticeSummaryIsBoundTo120UTF16Units(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"short", "abc", "abc"},
		{"exactly 120", strings.Repeat("a", 120), strings.Repeat("a", 120)},
		{"121", strings.Repeat("a", 121), strings.Repeat("a", 119) + "…"},
		{"astral counts twice", strings.Repeat("😀", 61), strings.Repeat("😀", 59) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := subagent.BoundSummary(tt.in); got != tt.want {
				t.Errorf("BoundSummary = %q, want %q", got, tt.want)
			}
		})
	}
	m := subagent.SettlementNotice("c1", "weird", nil)
	if got := session.JoinText(m.Content, "\n"); got != "Background subagent c1 ended abnormally (weird) before it finished.\nIt left no closing message." {
		t.Errorf("abnormal notice = %q", got)
	}
}
