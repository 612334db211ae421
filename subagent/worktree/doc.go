// Package worktree manages the git worktrees that isolate subagents: it
// creates a worktree of a repository on a new branch, tells whether the
// worktree was changed (and how, as a diffstat) and removes it again. It
// runs the real `git` command (exec.CommandContext), so what it does is
// exactly what a person would see with git.
//
// Layout: a child named N of a repository rooted at R gets the worktree
// R/.acp-agent/worktrees/N on the branch acp-agent/N, started from R's
// HEAD. The folder R/.acp-agent/worktrees holds a .gitignore of "*", so
// the repository's `git status` stays clean while worktrees exist.
//
// Layering: a leaf of the subagent runtime: standard library,
// internal/errcode and internal/ownpaths (to claim the folders it makes)
// only; it must not import any other package of this module. Concurrency: each call runs its own git
// processes and waits for them under the caller's context (a cancel kills
// git's process group: internal/gitrun). The one state kept between calls
// is a lock per repository (Lock): git steps on one repository run one at
// a time. A worktree being made can be journaled first (Intents: a file
// per worktree in the agent's data directory), so the next process removes
// what a killed one half-made (Intents.Sweep).
package worktree
