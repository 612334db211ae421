package subagent_test

import (
	"context"
	"testing"

	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent"
)

// A start whose caller aborts between publication (subagent/start) and
// inbox acceptance is rolled back (contract C7); the published start edge
// must still be closed by a subagent/end with the same run id.
func TestRollbackAfterPublishedStartEmitsTheMatchingEnd(t *testing.T) {
	base := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "never").model())
	parent := st.NewParent(t, "parent")
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventStart {
			cancel()
		}
	})
	lc := record(st.Runtime)
	_, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("go"), Parent: parent})
	if err == nil {
		t.Fatal("start aborted between publication and acceptance succeeded")
	}
	evs := lc.all()
	if len(evs) != 2 || evs[0].Type != subagent.EventStart || evs[1].Type != subagent.EventEnd {
		t.Fatalf("lifecycle = %+v, want start then end", evs)
	}
	if evs[0].RunID != evs[1].RunID || evs[1].StopReason != driver.StopAborted || len(evs[1].LastAssistantMessage) != 0 {
		t.Fatalf("end %+v does not close start %+v as aborted without output", evs[1], evs[0])
	}
	if st.Live(evs[0].ID) != nil {
		t.Fatal("rolled-back child is still live")
	}
}
