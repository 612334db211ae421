package session

// This file defines the check of parent chains: session headers name their
// parent, and a corrupt or hostile data directory can make that chain loop.

import (
	"slices"
	"strings"
)

// CorruptParents returns the sessions of parentOf (id → the
// ParentSession of its header, "" for none) whose parent chain loops, each
// with a description for people: "names itself as its parent" or "parent
// cycle a → b → a" (the cycle starting at its smallest id). Sessions whose
// chain only leads into a cycle are not in it: their own link is sound.
// The check is linear in the number of sessions; readers that walk parent
// chains show these sessions as corrupt instead of walking them.
func CorruptParents(parentOf map[string]string) map[string]string {
	out := map[string]string{}
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int, len(parentOf))
	ids := make([]string, 0, len(parentOf))
	for id := range parentOf {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, start := range ids {
		var path []string
		id := start
		for {
			if _, known := parentOf[id]; !known || state[id] == done {
				break
			}
			if state[id] == onPath {
				// The path from id onwards is a cycle.
				i := slices.Index(path, id)
				cycle := path[i:]
				if len(cycle) == 1 {
					out[id] = "names itself as its parent"
					break
				}
				k := slices.Index(cycle, slices.Min(cycle))
				order := append(append([]string{}, cycle[k:]...), cycle[:k]...)
				desc := "parent cycle " + strings.Join(append(order, order[0]), " → ")
				for _, c := range cycle {
					out[c] = desc
				}
				break
			}
			state[id] = onPath
			path = append(path, id)
			id = parentOf[id]
			if id == "" {
				break
			}
		}
		for _, p := range path {
			state[p] = done
		}
	}
	return out
}
