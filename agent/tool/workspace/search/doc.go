// Package search provides the model-facing search tools `glob` (files by
// name pattern) and `grep` (lines by regular expression). They walk the
// session's directory tree on this machine (an ACP client has no search
// method), skip .git and other version-control directories and what git
// would ignore (unless asked): .gitignore files, .git/info/exclude and
// the global core.excludesFile, with git's exact semantics (gitignore.go
// compiles each ignore file once into one matcher; wildmatch is a port of
// git's). They never follow symbolic links into other trees, skip binary
// files (a NUL in the first 8 KiB), and return sorted, capped results. A
// search rooted outside the session cwd asks the session's permission
// gate first.
//
// Speed: directories are read in parallel (walker.go, up to GOMAXPROCS)
// but visited in order; grep hands files to up to GOMAXPROCS searchers
// and merges their results in walk order (grepscan.go), finds a literal
// every match must contain with bytes.Index before running the regexp on
// that line only, counts lines only up to matches, reads files in 256 KiB
// blocks and stops at the limit. Results are the same as a sequential
// search's. Each candidate file is admitted in one place: the walk's
// callback (by name and type) and openCandidate (by what it opens).
//
// Layering: search imports agent/tool/workspace, agent/tool, agent/model,
// agent/session, doublestar and the standard library only; never acp,
// subagent, persistence or app.
package search
