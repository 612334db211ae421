package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// imports returns the module-internal packages pkg imports directly.
func imports(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var own []string
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, module+"/") {
			own = append(own, strings.TrimPrefix(imp, module+"/"))
		}
	}
	return own
}

// The subagent runtime and its drivers meet only at package driver: the
// driver declares what it needs from its host (driver.Host) and the
// runtime implements it, so a second driver can be written against the
// same seam. Neither side imports the other, and the runtime reaches the
// rest of the program only through agent interfaces and the persistence
// interfaces it declares itself (plus the leaf internal/errcode, the
// module's one typed-error shape, its own leaf subagent/worktree, the
// git runner of worktree isolation, with the leaf internal/ownpaths, and
// its own leaf subagent/budgets).
func TestRuntimeAndDriversMeetOnlyAtTheDriverSeam(t *testing.T) {
	tests := []struct {
		pkg     string
		allowed func(imp string) bool
	}{
		{"driver", func(imp string) bool { return imp == "agent" || imp == "agent/session" }},
		{"driver/inprocess", func(imp string) bool { return imp == "driver" || imp == "agent" || imp == "agent/session" }},
		// The external driver reuses the spawn driver's start and drives
		// the child's agent as its model and tool, through the workspace
		// seam (files, commands, gate) and the local process supervisor.
		{"driver/external", func(imp string) bool {
			switch imp {
			case "driver", "driver/inprocess", "agent/agentdef", "agent/model", "agent/session", "agent/tool",
				"agent/tool/workspace", "agent/tool/workspace/local":
				return true
			}
			return false
		}},
		{"subagent", func(imp string) bool {
			return imp == "driver" || imp == "agent" || strings.HasPrefix(imp, "agent/") || imp == "internal/errcode" ||
				imp == "subagent/worktree" || imp == "subagent/budgets"
		}},
		// Budgets are a leaf of the runtime: usage folds, limits, the tree
		// meter and the stall watchdog, over the session log and the price
		// table only.
		{"subagent/budgets", func(imp string) bool {
			return imp == "agent/session" || imp == "agent/model" || imp == "agent/budget" || imp == "agent/projection"
		}},
		// The git runner of worktree isolation is a leaf of the runtime
		// (internal/ownpaths: the folders it makes are claimed as the
		// agent's, for the sandbox's guard); its files go through the
		// resolver of the agent's own file work (internal/beneath).
		{"subagent/worktree", func(imp string) bool {
			return imp == "internal/errcode" || imp == "internal/ownpaths" || imp == "internal/beneath" || imp == "internal/gitrun"
		}},
		// The resolver is a leaf every package may use.
		{"internal/beneath", func(imp string) bool { return imp == "internal/errcode" || imp == "internal/ownpaths" }},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			for _, imp := range imports(t, module+"/"+tt.pkg) {
				if !tt.allowed(imp) {
					t.Errorf("%s imports %s", tt.pkg, imp)
				}
			}
		})
	}
}
