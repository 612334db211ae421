package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The shared vocabularies are leaves: the typed-error shape
// (internal/errcode), the root-to-cwd walk (internal/levels) and the
// delegation names (agent/delegation) import nothing of the module, and the transcript renderer (agent/transcript)
// only the session vocabulary, so every package can use them without a
// new dependency edge. The test-only knobs (internal/testhooks) carry
// hook types only. The permission decision (agent/policy) sees the
// settings rules only.
func TestSharedPackagesStayLeaves(t *testing.T) {
	tests := []struct {
		pkg     string
		allowed []string
	}{
		{"internal/errcode", nil},
		// The walk from the git root down to the cwd, shared by
		// instructions and agent definitions.
		{"internal/levels", nil},
		{"agent/delegation", nil},
		// Agent definitions are parsed only: no runtime, settings or tools;
		// their files are read beneath a root like the tools' (beneath).
		{"agent/agentdef", []string{"internal/levels", "internal/beneath"}},
		// Skills are parsed only, like agent definitions.
		{"agent/skill", []string{"agent/agentdef", "internal/levels", "internal/beneath"}},
		{"agent/transcript", []string{"agent/session"}},
		{"internal/testhooks", []string{"agent/model", "driver/inprocess", "persistence"}},
		{"agent/budget", []string{"agent/model", "agent/session"}},
		{"agent/compact", []string{"agent/budget", "agent/model", "agent/session"}},
		// The permission decision: the settings rules only, so the ACP
		// server and a headless run decide alike (no ACP, no tools).
		{"agent/policy", []string{"agent/settings"}},
		{"agent/settings", []string{"internal/beneath"}},
		// The per-root settings cache: the settings only.
		{"agent/settings/rootpolicy", []string{"agent/settings"}},
		// The child-tree watcher reads the live session store only, so the
		// ACP adapter can encode its events without the subagent runtime.
		{"subagent/childtree", []string{"agent/session"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			for _, imp := range imports(t, module+"/"+tt.pkg) {
				if !slices.Contains(tt.allowed, imp) {
					t.Errorf("%s imports %s", tt.pkg, imp)
				}
			}
		})
	}
}

// The ACP adapter knows the subagent runtime only through what it
// declares itself (acp.SubagentCatalog) and the shared delegation names:
// it never depends on the runtime, its drivers, storage or the
// composition. The one package below subagent/ it may use is the
// child-tree watcher (subagent/childtree), whose events it encodes: that
// package sits beside the runtime because it says what a child is, but it
// is a leaf over the live session store (TestSharedPackagesStayLeaves),
// so allowing it brings no runtime, driver or storage into acp.
func TestProtocolAdapterDependsOnlyOnTheAgentSide(t *testing.T) {
	forbidden := []string{module + "/subagent", module + "/driver", module + "/persistence", module + "/app", module + "/scenarios", module + "/internal/testhooks"}
	for _, d := range deps(t, module+"/acp") {
		if d == module+"/subagent/childtree" {
			continue
		}
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("acp depends on %s", d)
			}
		}
	}
}

// Test-only knobs reach a process only through app.Config.Testing: outside
// test files, only the composition (app) and the scenario runner import
// internal/testhooks.
func TestOnlyTheCompositionAndScenariosImportTestHooks(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{module + "/app", module + "/scenarios"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || slices.Contains(allowed, fields[0]) {
			continue
		}
		if slices.Contains(fields[1:], module+"/internal/testhooks") {
			t.Errorf("%s imports internal/testhooks outside its tests", fields[0])
		}
	}
}

// The helpers under internal/ serve the product packages and never the
// other way round: none of them imports a product package (only other
// helpers under internal/ and the standard library or third parties).
func TestInternalImportsNoProductPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// internal/testhooks carries the hook types of what tests replace
	// (shared_test.go, TestSharedPackagesStayLeaves), and the layering
	// tests themselves import nothing of the module.
	exempt := []string{module + "/internal/testhooks"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || slices.Contains(exempt, fields[0]) {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module+"/") && !strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports the product package %s", fields[0], imp)
			}
		}
	}
}
