// Package prompt assembles the system prompt of a session from sections:
// who the agent is and how it works (sections/identity.md), guidance for
// each tool the session is offered (sections/tools/NAME.md), the
// environment block (cwd, OS/arch, shell, date, git root, branch, dirty),
// the project instructions (every AGENTS.md from the git root down to the
// cwd, nearest last, CLAUDE.md where a level has none, and the user's
// $XDG_CONFIG_HOME/acp-agent/AGENTS.md, under a size cap) and, for a
// delegated child, its delegation section.
//
// The assembled text is computed once per session and recorded in the
// session log by the agent loop, so a loaded or resumed session uses
// exactly the prompt the model saw; this package only builds it. Probe
// runs git (a branch query only when .git/HEAD does not name one, and
// `git status --porcelain`) through internal/gitrun, the agent's one git
// runner (no inherited GIT_* variable; no fsmonitor, hook or filter of the
// repository), under one timeout that bounds the whole wait: each git runs
// in its own process group, killed as a group when the timeout ends. A Pending is a probe started ahead of its use (when the
// session is created), so the first prompt does not wait for git.
//
// Determinism: Build is a pure function of its Input; the date comes from
// the caller (the session header's createdAt, an injectable clock) and
// Probe takes its environment through ProbeOptions, so scenario runs fix
// every volatile field.
//
// Layering: prompt imports only the standard library, internal/levels
// (the walk from the git root down to the cwd, shared with agent
// definitions) and internal/gitrun (the git runner); it must not import
// any other package of this module.
package prompt
