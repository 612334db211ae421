package cli

// This file is the "skills" command: the skills a session in a directory
// would offer (package agent/skill), as /skills shows them.

import (
	"context"
	"flag"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/skill"
	"github.com/acp-agent/acp-agent/app"
)

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
			cwd, err := dirArg("skills", args)
			if err != nil {
				return err
			}
			set := skill.Load(app.DefinitionOptions(cwd, app.PromptConfig{}, env.Getenv))
			fmt.Fprintf(env.Stdout, "Skills of %s (%d):\n", cwd, set.Len())
			return app.WriteSkills(env.Stdout, set, cwd)
		},
	}
}
