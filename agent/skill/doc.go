// Package skill finds and parses skills: folders holding a SKILL.md (the
// open Agent Skills format) whose frontmatter gives a name and a
// description and whose body the model loads only when it uses the
// skill, with the files beside it.
//
// Skills are read from .acp-agent/skills/, .claude/skills/ and
// .agents/skills/ in the project (every directory from the git root down
// to the cwd) and from the user's folders of the same
// ($XDG_CONFIG_HOME/acp-agent/skills/, ~/.claude/skills/,
// ~/.agents/skills/). Precedence for one name: project over user, then
// that source order, then the directory nearest the cwd; a skill that
// loses is reported (shadowed), an invalid one with its file, line and
// why, and skipped. Nothing here is fatal.
//
// Files are read beneath a root (internal/beneath, os.Root):
// project skills beneath the top of the walk, so a skill folder or file
// symlinked out of the repository is refused, not followed; the person's
// own folders may link anywhere, as for agent definitions.
//
// The package parses only: it imports agent/agentdef (the frontmatter
// split and the Problem shape), internal/levels and the reads beneath a
// root; never the tools, the agent runtime or the settings.
package skill
