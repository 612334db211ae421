package settings

import (
	"os"
	"path/filepath"
	"syscall"
)

// DeniedByAnotherName reports the deny rule that covers the file at abs
// under another of its names: for a regular file with more than one hard
// link, a deny rule of the call's tool (or kind) whose argument is a plain path (no
// wildcard; relative to cwd unless absolute) naming the same file. Rules
// match names, and a hard link is a name the rule never saw: without this,
// "deny read(.env)" would only ask for a link to .env.
//
// Patterns with wildcards are not expanded (a limit docs/boundary.md
// states).
func (p *Policy) DeniedByAnotherName(tool, kind, cwd, abs string) (string, bool) {
	c := Call{Tool: tool, Kind: kind}
	if p == nil || !filepath.IsAbs(abs) {
		return "", false
	}
	p.mu.Lock()
	deny := p.rules.deny
	p.mu.Unlock()
	var target os.FileInfo
	for _, r := range deny {
		if !r.HasArg || !r.literal || !r.nameMatches(c) {
			continue
		}
		if target == nil {
			fi, err := os.Stat(abs)
			if err != nil || !fi.Mode().IsRegular() || !linked(fi) {
				return "", false
			}
			target = fi
		}
		named := r.Arg
		if !filepath.IsAbs(named) {
			named = filepath.Join(cwd, named)
		}
		if fi, err := os.Stat(named); err == nil && os.SameFile(fi, target) {
			return r.Text, true
		}
	}
	return "", false
}

// linked reports whether fi's file has more than one hard link (true
// where the system does not say).
func linked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink > 1
}
