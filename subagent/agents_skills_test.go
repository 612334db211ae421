package subagent_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/skill"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

func writeSkill(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, ".acp-agent", "skills", name, skill.FileName)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\nname: "+name+"\ndescription: About "+name+".\n---\n"+body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A definition's skills: are preloaded into the child's persona after
// its instructions and recorded (name, file, hash) in its definition
// record; a cold resume after the skill's file changed keeps the text the
// child started with. A skill that is not installed refuses the call.
func TestDefinitionSkillsArePreloadedRecordedAndKeptOnResume(t *testing.T) {
	ctx := testCtx(t)
	var specs []subagent.ChildSpec
	st, ps, _, _ := faultStack(t, newScript().text("write it", "one", "two").model(), func(c *subagenttest.Config) {
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
	writeSkill(t, dir, "commit-style", "Imperative mood, version one.")
	set := writeAgents(t, dir, map[string]string{
		"committer.md": "---\ndescription: Writes commits\nskills: [commit-style]\n---\nYou write commits.\n",
		"broken.md":    "---\ndescription: Needs a missing skill\nskills: [nowhere]\n---\n",
	})
	skills := skill.Load(skill.Options{Cwd: dir})
	k, ok := skills.Get("commit-style")
	if !ok {
		t.Fatalf("skills: %v", skills.Problems)
	}
	d := subagent.NewSubagentToolWith(st.Runtime, &subagent.AgentChoices{Set: set, Skills: skills})

	_, err := invoke(t, d, parent, map[string]any{"description": "broken", "prompt": "go", "agent": "broken"})
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != subagent.CodeUnknownSkill || !strings.Contains(te.Message, `preloads skill "nowhere"`) {
		t.Fatalf("missing skill: %v", err)
	}

	res, err := invoke(t, d, parent, map[string]any{"description": "write it", "prompt": "write", "agent": "committer"})
	if err != nil || res.IsError {
		t.Fatalf("start: %v %+v", err, res)
	}
	childID, _, _ := strings.Cut(strings.TrimPrefix(session.JoinText(res.Content, ""), "started subagent "), " ")
	lc.waitEnds(t, ctx, childID, 1)
	wantPersona := "You write commits.\n\nSkills preloaded by your agent definition (follow them where they apply; their files are in each folder):\n\n" +
		fmt.Sprintf("<skill name=\"commit-style\" folder=%q>\nImperative mood, version one.\n</skill>", k.Dir)
	if len(specs) != 1 || specs[0].Persona != wantPersona {
		t.Fatalf("persona = %q\nwant %q", specs[0].Persona, wantPersona)
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, childID)
	rec, err := subagent.FoldDefinition(evs)
	if err != nil || rec == nil || len(rec.Skills) != 1 || rec.Skills[0] != (subagent.SkillRecord{Name: "commit-style", File: k.File, Hash: k.Hash}) {
		t.Fatalf("definition record %+v, %v", rec, err)
	}

	writeSkill(t, dir, "commit-style", "Changed, version two.")
	if _, err := st.Runtime.Followup(ctx, parent, childID, text("again")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, childID, 2)
	if len(specs) != 2 || specs[1].Persona != wantPersona || specs[1].Definition == nil || len(specs[1].Definition.Skills) != 1 ||
		specs[1].Definition.Skills[0].Hash != k.Hash {
		t.Errorf("resume spec persona %q, definition %+v", specs[len(specs)-1].Persona, specs[len(specs)-1].Definition)
	}
}
