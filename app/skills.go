package app

// This file wires skills (package agent/skill) into the composition: each
// session loads the skills of its directory when it starts (the `skill`
// tool and its system-prompt listing, agentdefs.go), and the /skills
// slash command and the "skills" subcommand (app/cli) list them.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/skill"
	"github.com/acp-agent/acp-agent/agent/tool/skilltool"
)

// skills loads the skills of cwd (the same folders and user switch as
// the agent definitions) and logs what was reported about them.
func (a *App) skills(cwd string) *skill.Set {
	if cwd == "" {
		return &skill.Set{}
	}
	set := skill.Load(DefinitionOptions(cwd, a.Config.Prompt, a.Config.Getenv))
	for _, p := range set.Problems {
		if p.Skipped {
			a.Log.Warn("skill skipped", "problem", p.String())
		} else {
			a.Log.Info("skill field not used", "problem", p.String())
		}
	}
	return set
}

// skillsSlashCommand is /skills: the skills of the session's directory.
func (a *App) skillsSlashCommand() acp.Command {
	return acp.Command{
		Name:        "skills",
		Description: "list the skills of this session's directory (name, description, folder) and the files that were skipped",
		Run: func(_ context.Context, sessionID, _ string) (string, error) {
			s, ok := a.Sessions.Get(sessionID)
			if !ok {
				return "", fmt.Errorf("session %s is not live", sessionID)
			}
			cwd := s.Header().Cwd
			set := skill.Load(DefinitionOptions(cwd, a.Config.Prompt, a.Config.Getenv))
			var b strings.Builder
			if err := WriteSkills(&b, set, cwd); err != nil {
				return "", err
			}
			return fmt.Sprintf("Skills (%d):\n\n```text\n%s```\n", set.Len(), b.String()), nil
		},
	}
}

// WriteSkills renders a skill set: one block per skill, then what was
// reported. Paths inside cwd are shown relative to it.
func WriteSkills(w io.Writer, set *skill.Set, cwd string) error {
	b := bufio.NewWriter(w)
	show := func(p string) string {
		if r, err := filepath.Rel(cwd, p); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return r
		}
		return p
	}
	if set.Len() == 0 {
		b.WriteString("  (no skills)\n")
	}
	for _, k := range set.Skills {
		fmt.Fprintf(b, "  %s — %s\n", k.Name, skilltool.Cut(k.Description, 100))
		fmt.Fprintf(b, "      folder: %s (%s, %s)\n", show(k.Dir), k.Scope, k.Source)
	}
	if len(set.Problems) > 0 {
		fmt.Fprintf(b, "Reported (%d):\n", len(set.Problems))
		for _, p := range set.Problems {
			p.File = show(p.File)
			tag := "note"
			if p.Skipped {
				tag = "skipped"
			}
			fmt.Fprintf(b, "  [%s] %s\n", tag, skilltool.Cut(p.String(), 300))
		}
	}
	return b.Flush()
}
