package subagent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// hostDriver is a second driver written only against driver.Host: it
// creates its child through the host and releases it on dispose.
type hostDriver struct {
	stub
	// idle is passed to CreateChild for a continuable child (a driver
	// must pass nil there).
	idle func(*agent.Agent)
}

func (d *hostDriver) StartOneShot(ctx context.Context, host driver.Host, req driver.Request) (*driver.Run, error) {
	child, err := host.CreateChild(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	run := driver.NewRun(child.SessionID(), child, child.Session().Header().DelegationDepth, func(ctx context.Context) error {
		return host.ReleaseChild(ctx, child)
	})
	run.Settle(driver.Result{StopReason: driver.StopCompleted}, nil)
	return run, nil
}

func TestADriverCreatesAndReleasesItsChildThroughTheHost(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{})
	parent := st.NewParent(t, "parent")
	d := &hostDriver{stub: stub{name: "remote", caps: driver.Capabilities{DepthLimit: true}}}
	unreg, _ := st.Runtime.RegisterProvider(d)
	defer unreg()
	if _, err := st.Runtime.Start(ctx, "remote", subagent.OneShotRequest{Parent: parent, MaxDepth: subagent.Depth(0)}); !errors.As(err, new(*subagent.SubagentDepthError)) {
		t.Fatalf("depth cap through the host: %v", err)
	}
	run, err := st.Runtime.Start(ctx, "remote", subagent.OneShotRequest{Parent: parent, Label: "r"})
	if err != nil {
		t.Fatal(err)
	}
	h := run.LocalAgent.Session().Header()
	if h.ParentSession != parent.SessionID() || h.DelegationDepth != 1 || h.Origin != session.OriginSubagent || run.Depth != 1 {
		t.Errorf("child header = %+v, run depth %d", h, run.Depth)
	}
	if _, ok := st.Agents.Get(run.ID); !ok {
		t.Error("the host did not register the child")
	}
	if err := run.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Sessions.Get(run.ID); ok {
		t.Error("child session still live after the driver released it")
	}
	if _, ok := st.Agents.Get(run.ID); ok {
		t.Error("child agent still registered after the driver released it")
	}
}

func (d *hostDriver) StartContinuable(ctx context.Context, host driver.Host, req driver.Request) (*agent.Agent, error) {
	return host.CreateChild(ctx, nil, d.idle)
}

func TestAContinuableChildStartsThroughTheSameHost(t *testing.T) {
	ctx := testCtx(t)
	st, ps := durableStack(t, t.TempDir(), newScript().text("remote child", "done").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	t.Run("a driver may not take over a continuable child's idleness", func(t *testing.T) {
		d := &hostDriver{stub: stub{name: "greedy"}, idle: func(*agent.Agent) {}}
		unreg, _ := st.Runtime.RegisterProvider(d)
		defer unreg()
		_, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "greedy", Label: "g", ChildID: "greedy-child", Parent: parent, Prompt: text("x")})
		if !subagent.HasCode(err, subagent.CodeInvalidRequest) {
			t.Fatalf("err = %v", err)
		}
		if _, live := st.Sessions.Get("greedy-child"); live || st.Runtime.ResidentCount() != 0 {
			t.Error("a refused continuable start left a child live")
		}
	})
	t.Run("the host stages the descriptor and owns the activation", func(t *testing.T) {
		d := &hostDriver{stub: stub{name: "remote"}}
		unreg, _ := st.Runtime.RegisterProvider(d)
		defer unreg()
		id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "remote", Label: "remote child", Parent: parent, Prompt: text("go")})
		if err != nil {
			t.Fatal(err)
		}
		ends := lc.waitEnds(t, ctx, id, 1)
		if ends[0].StopReason != driver.StopCompleted || st.Runtime.Resident(id) {
			t.Errorf("end = %+v, resident %v", ends[0], st.Runtime.Resident(id))
		}
		h, events, err := (durable{ps}).Inspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if h.ParentSession != parent.SessionID() || h.SeedLength != 0 || indexOf(events, session.TypeDescriptor) != 0 {
			t.Errorf("header %+v, descriptor at %d", h, indexOf(events, session.TypeDescriptor))
		}
	})
}
