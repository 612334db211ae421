// Package search provides the model-facing search tools `glob` (files by
// name pattern) and `grep` (lines by regular expression). They walk the
// session's directory tree on this machine (an ACP client has no search
// method), skip .git and other version-control directories and what
// .gitignore files and .git/info/exclude ignore (unless asked), never follow
// symbolic links into other trees, skip binary files, and return sorted,
// capped results. A search rooted outside the session cwd asks the
// session's permission gate first.
//
// Layering: search imports agent/tool/workspace, agent/tool, agent/model,
// agent/session, doublestar, go-git's gitignore and the standard library only; never acp,
// subagent, persistence or app.
package search
