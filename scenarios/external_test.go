package scenarios

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	agentBinOnce sync.Once
	agentBinErr  error
	agentBinOut  []byte
)

// needAgentBinary builds acp-agent once per test binary for the scenarios
// that run it as an external agent, and names it (SetAgentBinary).
func needAgentBinary(t *testing.T) {
	t.Helper()
	agentBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "acp-agent-bin-")
		if err != nil {
			agentBinErr = err
			return
		}
		bin := filepath.Join(dir, "acp-agent")
		agentBinOut, agentBinErr = exec.Command("go", "build", "-o", bin, "github.com/acp-agent/acp-agent/cmd/acp-agent").CombinedOutput()
		if agentBinErr == nil {
			SetAgentBinary(bin)
		}
	})
	if agentBinErr != nil {
		t.Fatalf("go build acp-agent: %v\n%s", agentBinErr, agentBinOut)
	}
}
