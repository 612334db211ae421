package scenarios

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
)

// TestMain checks that runs leave no goroutine behind: stopping an agent
// process must end everything it and the client started.
func TestMain(m *testing.M) {
	sandbox.Main() // serves sandboxed commands (workspace-sandbox)
	goleak.VerifyTestMain(m)
}
