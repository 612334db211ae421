// Package beneath is the one path resolver for the files the agent itself
// touches (not the model's tool calls, which go through
// agent/tool/workspace, but the agent's own work: subagent worktrees and
// their .gitignore, agent definitions and skills, settings, recording
// snapshots). Every path is resolved beneath a root directory through
// Go's os.Root (openat with each component checked, or openat2's
// RESOLVE_BENEATH where the kernel has it): a ".." or a symlink that
// leads out of the root fails with CodeLeavesRoot and a message that
// names the path and the root, and nothing is read or written.
//
// What a root is, is the caller's choice: the repository for a project's
// files, the home directory for the person's own, the recording's
// directory for a snapshot. The root itself is opened as named (a
// symlinked home directory is still the home directory).
//
// RealDirs goes further for folders the agent creates and later deletes
// from (.acp-agent/worktrees): each component must be a real directory,
// not a symlink even to a place inside the root, so a folder committed to
// a repository as a symlink is refused.
//
// Layering: the standard library, internal/errcode and internal/ownpaths
// only; it must not import any other package of this module.
package beneath
