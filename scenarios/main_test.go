package scenarios

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that runs leave no goroutine behind: stopping an agent
// process must end everything it and the client started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
