package skilltool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/skill"
	"github.com/acp-agent/acp-agent/agent/tool"
)

func makeSkills(t *testing.T, n int) (string, *skill.Set) {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("skill-%02d", i)
		p := filepath.Join(dir, ".acp-agent", "skills", name)
		if err := os.MkdirAll(filepath.Join(p, "ref"), 0o755); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("---\nname: %s\ndescription: Does\n  thing %d. %s\n---\nStep one of %s.\n", name, i, strings.Repeat("x", 300), name)
		if err := os.WriteFile(filepath.Join(p, skill.FileName), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "ref", "guide.md"), []byte("guide"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, skill.Load(skill.Options{Cwd: dir})
}

func TestListingIsCappedWithANote(t *testing.T) {
	_, set := makeSkills(t, 5)
	got := Listing(set, 3)
	lines := strings.Split(got, "\n")
	if len(lines) != 5 {
		t.Fatalf("listing:\n%s", got)
	}
	if !strings.HasPrefix(lines[1], "- skill-00: Does thing 0. xxx") || len([]rune(strings.TrimPrefix(lines[1], "- skill-00: "))) != ListedDescription {
		t.Errorf("first entry %q: want its description folded and cut to %d runes", lines[1], ListedDescription)
	}
	want := "(2 more skills are not listed here, to keep this prompt short; `skill` loads any of them by name: skill-03, skill-04)"
	if lines[4] != want {
		t.Errorf("note = %q; want %q", lines[4], want)
	}
	if all := Listing(set, 0); strings.Contains(all, "more skills") || strings.Count(all, "\n- ") != 5 {
		t.Errorf("uncapped listing:\n%s", all)
	}
	if Listing(&skill.Set{}, 0) != "" {
		t.Error("a listing without skills")
	}
}

func TestExecuteLoadsBodyAndFiles(t *testing.T) {
	dir, set := makeSkills(t, 2)
	tl := New(set)
	res, err := tl.Execute(context.Background(), tool.Invocation{Arguments: json.RawMessage(`{"name":"skill-01"}`)})
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, ".acp-agent", "skills", "skill-01")
	text := res.Content[0].Text
	for _, want := range []string{"<skill name=\"skill-01\" folder=\"" + folder + "\">\nStep one of skill-01.\n</skill>", "- SKILL.md\n- ref/guide.md\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	out := res.Raw.(Output)
	if out.Name != "skill-01" || out.Folder != folder || len(out.Files) != 2 || !strings.HasPrefix(out.Hash, "sha256:") {
		t.Errorf("raw = %+v", out)
	}
	_, err = tl.Execute(context.Background(), tool.Invocation{Arguments: json.RawMessage(`{"name":"nope"}`)})
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != CodeUnknownSkill || !strings.Contains(te.Message, "skill-00, skill-01") {
		t.Errorf("unknown skill: %v", err)
	}
}
