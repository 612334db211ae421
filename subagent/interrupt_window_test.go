package subagent_test

import (
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent"
)

// An interrupt that lands right after a start was accepted, before the
// child's loop opened the turn for the prompt, still stops that work: the
// child settles "stopped" with no closing message (contract §5.7 C71) instead
// of parking its prompt and staying resident without a turn.
func TestInterruptRightAfterStartStopsThePromptsTurn(t *testing.T) {
	for _, auth := range []struct {
		name string
		get  func(parent string) subagent.Authority
	}{
		{"user", func(p string) subagent.Authority { return subagent.UserAuthority(p) }},
		{"ancestor", nil},
	} {
		t.Run(auth.name, func(t *testing.T) {
			ctx := testCtx(t)
			// The child's model never answers on its own, so only the
			// interrupt can end its first turn.
			g := newGate()
			st, _ := durableStack(t, t.TempDir(), newScript().add("child", g.reply("never")).text("main", "noted").model())
			lc := record(st.Runtime)
			parent := st.NewParent(t, "parent")
			id, _ := startChild(t, ctx, st.Runtime, parent, "child")
			a := subagent.AncestorAuthority(parent)
			if auth.get != nil {
				a = auth.get("parent")
			}
			// No wait here: the interrupt usually lands before the child's
			// loop goroutine opened the turn for the prompt.
			if err := st.Runtime.Interrupt(id, a); err != nil {
				t.Fatal(err)
			}
			ends := lc.waitEnds(t, ctx, id, 1)
			if ends[0].StopReason != driver.StopAborted {
				t.Errorf("stop reason = %q", ends[0].StopReason)
			}
			waitIdle(t, ctx, parent)
			if st.Runtime.Resident(id) {
				t.Error("child still resident")
			}
			notices := userTexts(parent.Session().MustEvents(), "subagent-settled")
			if len(notices) != 1 || !strings.Contains(notices[0], "was stopped before it finished.") {
				t.Errorf("notices = %q", notices)
			}
		})
	}
}
