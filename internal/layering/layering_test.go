package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/acp-agent/acp-agent"

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestDependenciesFlowOneWay(t *testing.T) {
	tests := []struct {
		pkg       string
		forbidden []string
	}{
		{module + "/agent/...", []string{"github.com/coder/acp-go-sdk", module + "/acp", module + "/persistence", module + "/subagent", module + "/driver", module + "/app"}},
		{module + "/subagent/...", []string{"github.com/coder/acp-go-sdk", module + "/acp", module + "/persistence", module + "/app"}},
		{module + "/persistence/...", []string{"github.com/coder/acp-go-sdk", module + "/acp", module + "/subagent", module + "/agent/model", module + "/agent/tool", module + "/app"}},
		{module + "/driver", []string{"github.com/coder/acp-go-sdk", module + "/acp", module + "/app"}},
		{module + "/driver/inprocess/...", []string{"github.com/coder/acp-go-sdk", module + "/acp", module + "/app"}},
		// The external-agent driver is an ACP client of other agents: it
		// uses the SDK's client side (TestOnlyACPImportsTheSDK), never our
		// own adapter, the runtime, persistence or the composition.
		{module + "/driver/external/...", []string{module + "/acp", module + "/app", module + "/subagent", module + "/persistence"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			for _, d := range deps(t, tt.pkg) {
				for _, f := range tt.forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s depends on %s", tt.pkg, d)
					}
				}
			}
		})
	}
}

// sdkImporters may import the ACP SDK: acp serves our editor (the agent
// side); driver/external drives other ACP agents as children (the client
// side, and only it: it is the one place that starts another agent).
var sdkImporters = map[string]bool{
	module + "/acp":             true,
	module + "/driver/external": true,
}

func TestOnlyACPImportsTheSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/coder/acp-go-sdk") && !sdkImporters[fields[0]] {
				t.Errorf("%s imports the ACP SDK; only %s/acp (and the external-agent driver) may", fields[0], module)
			}
		}
	}
}
