package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The released binary links no test-only code: no package "testing", no
// test framework or helper (goldie, goleak, internal/proctest,
// internal/benchtree, the ACP schema validator internal/acpschema,
// httptest). The scenario runner ships in the binary by
// design ("acp-agent scenario run"), so what it needs is allowed: its
// JSON-RPC client (sourcegraph/jsonrpc2, imported by scenarios alone), the
// demo MCP server (agent/tool/mcp/mcptest) and the test knobs
// (internal/testhooks, see shared_test.go).
func TestBinaryLinksNoTestOnlyCode(t *testing.T) {
	forbidden := []string{
		"testing",
		"net/http/httptest",
		"github.com/sebdah/goldie",
		"go.uber.org/goleak",
		module + "/internal/proctest",
		module + "/internal/benchtree",
		module + "/internal/acpschema",
	}
	for _, d := range deps(t, module+"/cmd/acp-agent") {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("cmd/acp-agent links %s", d)
			}
		}
	}
}

// sourcegraph/jsonrpc2 is the client of the scenario runner, of
// "acp-agent exec" (app/headless) and of the development tool that times
// any build through its stdio (internal/cmdbench/drive, not linked into
// the binary), kept apart from the ACP SDK so the wire is checked
// independently: no other package of the module imports it outside its
// tests.
func TestOnlyScenariosImportJSONRPC2(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] == module+"/scenarios" || fields[0] == module+"/app/headless" || fields[0] == module+"/internal/cmdbench/drive" {
			continue
		}
		if slices.ContainsFunc(fields[1:], func(imp string) bool { return strings.HasPrefix(imp, "github.com/sourcegraph/jsonrpc2") }) {
			t.Errorf("%s imports sourcegraph/jsonrpc2 outside its tests; only %s/scenarios, app/headless and internal/cmdbench/drive may", fields[0], module)
		}
	}
}
