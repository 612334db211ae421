package layering

import (
	"strings"
	"testing"
)

// The workspace tools (agent/tool/workspace and below) are agent-side
// code: the ACP adapter implements their interfaces, never the reverse,
// and they reach the calling agent only through tool.Caller.
func TestWorkspaceToolsStayAgentSide(t *testing.T) {
	pkg := module + "/agent/tool/workspace/..."
	forbidden := []string{"github.com/coder/acp-go-sdk", module + "/acp", module + "/persistence", module + "/subagent",
		module + "/app", module + "/driver", module + "/agent/projection", module + "/agent/model/openai", module + "/agent/model/scripted"}
	exact := []string{module + "/agent"} // the agent loop itself (its subpackages session, tool, model are allowed)
	for _, d := range deps(t, pkg) {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
		for _, f := range exact {
			if d == f {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}
