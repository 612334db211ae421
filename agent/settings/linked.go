package settings

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// OtherNames says where DeniedByAnotherName looks for the other names of
// a file.
type OtherNames struct {
	// Tool and Kind are the call's: only deny rules for them count.
	Tool, Kind string
	// Bases are the directories relative rule paths are read against:
	// the project root (the root session's cwd), then a child's own cwd
	// when it differs (a worktree holds the same relative paths).
	Bases []string
	// MaxEntries bounds the directory entries read to find the files a
	// wildcard rule names; 0 checks the plain-path rules only.
	MaxEntries int
}

// NameDenial is a deny rule that covers a file under another of its names.
type NameDenial struct {
	// Rule is the deny rule's text.
	Rule string
	// Cut: the search for the files Rule names stopped at
	// OtherNames.MaxEntries before it could tell; the call is refused
	// rather than let through unchecked (fail closed).
	Cut bool
}

// readDir lists a directory for the wildcard search (tests count the
// calls).
var readDir = os.ReadDir

// DeniedByAnotherName reports the deny rule that covers the regular file
// at abs (absolute, symlinks resolved) under another of its names. Rules
// match names, and a hard link is a name the rule never saw: without
// this, "deny read(.env)" would only ask for a link to .env.
//
// Only a file with more than one hard link is looked at (one stat of abs,
// and only when a deny rule of the call's tool or kind takes a path), so
// an ordinary call pays nothing more. Then a rule naming a plain path
// (relative to each of q.Bases unless absolute) is checked with one stat;
// a rule with wildcards by reading the directories its pattern can reach
// (its literal leading directories, as deep as it goes, the whole base
// for a pattern matching a last name or holding "**"), comparing each
// regular file it names with abs by device and inode, at most
// q.MaxEntries entries in all. Where the bound is hit the answer is a
// denial with Cut set.
func (p *Policy) DeniedByAnotherName(q OtherNames, abs string) (NameDenial, bool) {
	c := Call{Tool: q.Tool, Kind: q.Kind}
	if p == nil || !filepath.IsAbs(abs) {
		return NameDenial{}, false
	}
	p.mu.Lock()
	deny := p.rules.deny
	p.mu.Unlock()
	var target os.FileInfo
	var wild []Rule
	for _, r := range deny {
		if !r.HasArg || !r.nameMatches(c) {
			continue
		}
		if target == nil {
			fi, err := os.Stat(abs)
			if err != nil || !fi.Mode().IsRegular() || !linked(fi) {
				return NameDenial{}, false
			}
			target = fi
		}
		if !r.literal {
			wild = append(wild, r)
			continue
		}
		for _, named := range ruleTargets(r.Arg, q.Bases) {
			if fi, err := os.Stat(named); err == nil && os.SameFile(fi, target) {
				return NameDenial{Rule: r.Text}, true
			}
		}
	}
	if len(wild) == 0 || q.MaxEntries <= 0 {
		return NameDenial{}, false
	}
	w := &linkSearch{call: c, target: target, left: q.MaxEntries}
	for _, g := range searchPlan(wild, q.Bases) {
		if d, ok := w.walk(g, g.start, 0); ok {
			return d, true
		}
	}
	return NameDenial{}, false
}

// ruleTargets is where a plain-path rule argument points: itself when
// absolute, else under each base.
func ruleTargets(arg string, bases []string) []string {
	if filepath.IsAbs(arg) {
		return []string{arg}
	}
	out := make([]string, 0, len(bases))
	for _, b := range bases {
		out = append(out, filepath.Join(b, arg))
	}
	return out
}

// ruleAt is a wildcard rule read against base ("" for an absolute
// pattern: its subjects are absolute paths).
type ruleAt struct {
	rule Rule
	base string
	// last is the pattern's last name: an entry whose name it does not
	// match is not named by the rule ("" where it is "**").
	last string
}

func newRuleAt(r Rule, base string) ruleAt {
	last := r.segs[len(r.segs)-1]
	if last == "**" {
		last = ""
	}
	return ruleAt{rule: r, base: base, last: last}
}

// searchGroup is one directory walk: from start, depth levels down (-1:
// no limit), for the rules whose names can lie there.
type searchGroup struct {
	start string
	depth int
	rules []ruleAt
}

// searchPlan is the walks covering wild read against bases: one per
// distinct start, a start inside an unlimited walk's start folded into
// it.
func searchPlan(wild []Rule, bases []string) []*searchGroup {
	var groups []*searchGroup
	add := func(start string, depth int, ra ruleAt) {
		for _, g := range groups {
			if g.start == start {
				if depth < 0 || g.depth >= 0 && depth > g.depth {
					g.depth = depth
				}
				g.rules = append(g.rules, ra)
				return
			}
		}
		groups = append(groups, &searchGroup{start: start, depth: depth, rules: []ruleAt{ra}})
	}
	for _, r := range wild {
		arg := strings.TrimPrefix(r.Arg, "./")
		absolute := strings.HasPrefix(arg, "/")
		if !strings.Contains(arg, "/") {
			// A last name anywhere ("*.pem", ".env*").
			for _, b := range bases {
				add(filepath.Clean(b), -1, newRuleAt(r, filepath.Clean(b)))
			}
			continue
		}
		segs := strings.Split(arg, "/")
		lead := 0 // literal leading directories
		for lead < len(segs)-1 && !strings.ContainsAny(segs[lead], `*?[\`) {
			if segs[lead] == ".." {
				lead = -1 // names outside a base are never relative subjects
				break
			}
			lead++
		}
		if lead < 0 {
			continue
		}
		depth := len(segs) - lead
		for _, s := range segs[lead:] {
			if strings.Contains(s, "**") {
				depth = -1
			}
		}
		if absolute {
			add(filepath.Clean("/"+filepath.Join(segs[:lead]...)), depth, newRuleAt(r, ""))
			continue
		}
		for _, b := range bases {
			b = filepath.Clean(b)
			add(filepath.Join(append([]string{b}, segs[:lead]...)...), depth, newRuleAt(r, b))
		}
	}
	// A start inside an unlimited walk is folded into it (a rule's
	// subject does not depend on where the walk began).
	slices.SortStableFunc(groups, func(a, b *searchGroup) int { return len(a.start) - len(b.start) })
	var out []*searchGroup
	for _, g := range groups {
		i := slices.IndexFunc(out, func(h *searchGroup) bool { return h.depth < 0 && within(h.start, g.start) })
		if i < 0 {
			out = append(out, g)
			continue
		}
		out[i].rules = append(out[i].rules, g.rules...)
	}
	return out
}

// linkSearch is one wildcard search for another name of target.
type linkSearch struct {
	call   Call
	target os.FileInfo
	left   int // entries still allowed
}

// walk reads dir (level levels below g.start) and its subdirectories as
// deep as g allows, comparing each regular file a rule of g names with
// the target. Symlinks are not followed.
func (w *linkSearch) walk(g *searchGroup, dir string, level int) (NameDenial, bool) {
	entries, err := readDir(dir)
	if err != nil && len(entries) == 0 {
		return NameDenial{}, false // nothing there to name the file
	}
	if w.left -= len(entries); w.left < 0 {
		return NameDenial{Rule: g.rules[0].rule.Text, Cut: true}, true
	}
	for _, e := range entries {
		switch {
		case e.IsDir():
			if g.depth < 0 || level+1 < g.depth {
				if d, ok := w.walk(g, filepath.Join(dir, e.Name()), level+1); ok {
					return d, true
				}
			}
		case e.Type().IsRegular():
			for _, ra := range g.rules {
				if ra.last != "" {
					if ok, _ := path.Match(ra.last, e.Name()); !ok {
						continue
					}
				}
				name := filepath.Join(dir, e.Name())
				subject := name
				if ra.base != "" {
					rel, err := filepath.Rel(ra.base, name)
					if err != nil {
						continue
					}
					subject = filepath.ToSlash(rel)
				}
				c := w.call
				c.Subject = subject
				if !ra.rule.matches(prepare(c), false) {
					continue
				}
				if fi, err := os.Lstat(name); err == nil && os.SameFile(fi, w.target) {
					return NameDenial{Rule: ra.rule.Text}, true
				}
			}
		}
	}
	return NameDenial{}, false
}

// within reports whether p is dir or beneath it (both clean).
func within(dir, p string) bool {
	if dir == p {
		return true
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// linked reports whether fi's file has more than one hard link (true
// where the system does not say).
func linked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink > 1
}
