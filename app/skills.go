package app

// This file wires skills (package agent/skill) into the composition: each
// session loads the skills of its directory when it starts (the `skill`
// tool and its system-prompt listing, agentdefs.go), and the /skills
// slash command and the "skills" subcommand list them.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
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
	set := skill.Load(definitionOptions(cwd, a.Config.Prompt, a.Config.Getenv))
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
			set := skill.Load(definitionOptions(cwd, a.Config.Prompt, a.Config.Getenv))
			var b strings.Builder
			if err := writeSkills(&b, set, cwd); err != nil {
				return "", err
			}
			return fmt.Sprintf("Skills (%d):\n\n```text\n%s```\n", set.Len(), b.String()), nil
		},
	}
}

// skillsCommand is "acp-agent skills [DIR]".
func skillsCommand() Command {
	return Command{
		Name:    "skills",
		Usage:   "skills [DIR]",
		Summary: "print the skills a session in DIR would offer (read-only)",
		Description: `Prints the skills a session in DIR (default the current directory) would
offer: the SKILL.md folders of .acp-agent/skills/, .claude/skills/ and
.agents/skills/ from the git root down to DIR, and of the user's folders:
name, description and folder of each, then every file that was skipped or
shadowed, with its line and why.`,
		Examples: []string{"acp-agent skills", "acp-agent skills ../other-project"},
		Flags:    func(*flag.FlagSet) {},
		Run: func(_ context.Context, env *Env, args []string) error {
			if len(args) > 1 {
				return usageErrorf("skills: want at most one directory, got %d arguments", len(args))
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			cwd, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
				return usageErrorf("skills: %s is not a directory", dir)
			}
			set := skill.Load(definitionOptions(cwd, PromptConfig{}, env.Getenv))
			fmt.Fprintf(env.Stdout, "Skills of %s (%d):\n", cwd, set.Len())
			return writeSkills(env.Stdout, set, cwd)
		},
	}
}

// writeSkills renders a skill set: one block per skill, then what was
// reported. Paths inside cwd are shown relative to it.
func writeSkills(w io.Writer, set *skill.Set, cwd string) error {
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
