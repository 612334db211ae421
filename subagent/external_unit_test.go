package subagent_test

import (
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
)

// externalChildEvents is a settled external child's log: its descriptor
// and definition record (the command; loadSession as given), the external
// session record (what the agent announced), a nested child announced
// twice (running, then idle), and a last turn that failed with cause.
func externalChildEvents(defLoad string, announcedLoad bool, cause string) []session.Event {
	load := "false"
	if announcedLoad {
		load = "true"
	}
	end := `{"turn":1,"reason":{"kind":"completed"}}`
	if cause != "" {
		end = `{"turn":1,"reason":{"kind":"error","error":{"code":"EXTERNAL_AGENT_FAILED","message":"` + cause + `"}}}`
	}
	ign := func(e session.Event) session.Event { e.Ignorable = true; return e }
	return []session.Event{
		ev(session.TypeDescriptor, 0, `{"version":2,"mode":"continuable","provider":"external","label":"ext"}`),
		ign(ev(subagent.TypeDefinition, 1, `{"name":"fake","hash":"h","file":"f.md","format":"ours","scope":"user","external":{"command":"fake"`+defLoad+`}}`)),
		ev(session.TypeTurnStart, 2, `{"turn":1}`),
		userMsg(3, "task"),
		ign(ev(subagent.TypeExternalSession, 4, `{"sessionId":"fake-1","command":"fake","loadSession":`+load+`,"resume":false}`)),
		ign(ev(subagent.TypeExternalNested, 5, `{"sessionId":"nested-7","title":"Scout","description":"looks around","state":"running"}`)),
		ign(ev(subagent.TypeExternalNested, 6, `{"sessionId":"nested-7","state":"idle","stopReason":"end_turn"}`)),
		ev(session.TypeTurnEnd, 7, end),
	}
}

// An external child's row says why its last turn failed and that it
// cannot be resumed, and the children its agent announced are rows under
// it: in its own listing, in the descendants walk (one level deeper,
// right after it), and in list_agents' text.
func TestExternalChildRowsShowCauseResumabilityAndNestedChildren(t *testing.T) {
	ctx := testCtx(t)
	f := newCatFix(t)
	f.author(session.Header{ID: "parent"}, nil)
	f.author(childHeader("ext-1", "parent", 10), externalChildEvents("", false, "external agent fake exited (exit status 3)"))
	f.author(childHeader("ext-2", "parent", 20), externalChildEvents(`,"loadSession":false`, true, ""))
	f.author(childHeader("ext-3", "parent", 30), externalChildEvents("", true, ""))
	f.author(childHeader("own-1", "parent", 40), childEvents(descPayload("own", 2)))

	rows, err := f.cat.ListChildren(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]string{}
	for _, r := range rows {
		notes[r.ID] = r.External.Note()
	}
	want := map[string]string{
		"ext-1": "failed: external agent fake exited (exit status 3); " + subagent.CannotResumeText,
		"ext-2": subagent.CannotResumeText, // the definition declines session/load
		"ext-3": "",
		"own-1": "",
	}
	for id, w := range want {
		if notes[id] != w {
			t.Errorf("%s note %q, want %q", id, notes[id], w)
		}
	}
	if len(rows) != 4 {
		t.Fatalf("children of parent: %+v (nested rows belong under their external child)", rows)
	}

	nested, err := f.cat.ListChildren(ctx, "ext-1")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, nested, `[{"kind":"child","id":"nested-7","mode":"nested","label":"Scout","activity":"inactive","hasChildren":false,
		"nested":{"description":"looks around","state":"idle","stopReason":"end_turn"}}]`)

	desc, err := f.cat.ListDescendants(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, d := range desc {
		order = append(order, d.ID+"@"+d.ParentID+"/"+string(rune('0'+d.Depth)))
	}
	if got := strings.Join(order, " "); got != "ext-1@parent/1 nested-7@ext-1/2 ext-2@parent/1 nested-7@ext-2/2 ext-3@parent/1 nested-7@ext-3/2 own-1@parent/1" {
		t.Fatalf("descendants %s", got)
	}
	raw, _ := desc[0].MarshalJSON()
	if !strings.Contains(string(raw), `"external":{"failure":"external agent fake exited (exit status 3)","cannotResume":"`+subagent.CannotResumeText+`"}`) {
		t.Errorf("row JSON %s", raw)
	}

	text := subagent.RenderAgents([]subagent.AgentEntry{{Kind: subagent.KindChild, ID: "ext-1", Label: "ext", Status: "ready", Note: notes["ext-1"]}})
	if !strings.Contains(text, "(failed: external agent fake exited (exit status 3); cannot resume: the agent does not support session/load)") {
		t.Errorf("list_agents text %q", text)
	}
}
