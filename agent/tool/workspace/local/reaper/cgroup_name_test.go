//go:build linux

package reaper

import (
	"strings"
	"testing"
)

// Every marker the agent makes names a cgroup: the hex ones as they are,
// the ACP ones ("<session id>/<call id>") by a hash, the same each time.
func TestCgroupNameForEveryMarker(t *testing.T) {
	for marker, want := range map[string]string{
		"ACP_AGENT_COMMAND=0123abcd":                   CgroupPrefix + "0123abcd",
		"ACP_AGENT_COMMAND=sess-1/call_1":              "",
		"ACP_AGENT_COMMAND=../../etc":                  "",
		"ACP_AGENT_COMMAND=" + strings.Repeat("a", 65): "",
		"no-equals":          "-",
		"ACP_AGENT_COMMAND=": "-",
	} {
		got := CgroupName(marker)
		switch want {
		case "-":
			if got != "" {
				t.Errorf("%q: %q, want none", marker, got)
			}
		case "":
			// A hashed name: 32 hex digits, stable, nothing of the id.
			id := strings.TrimPrefix(got, CgroupPrefix)
			if len(id) != 32 || strings.ContainsAny(id, "/.") || got != CgroupName(marker) {
				t.Errorf("%q: %q, want a stable hashed name", marker, got)
			}
		default:
			if got != want {
				t.Errorf("%q: %q, want %q", marker, got, want)
			}
		}
	}
}
