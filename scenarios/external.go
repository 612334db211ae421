package scenarios

// This file lets a scenario run acp-agent itself as an external agent
// (driver/external): the binary is put on the run's PATH as "acp-agent",
// deterministic, with its data under the run's root.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/acp-agent/acp-agent/app/cli"
)

var (
	binMu       sync.Mutex
	agentBinary string
)

// SetAgentBinary names the acp-agent executable scenarios with
// external_agents run as an external agent (the scenario command sets its
// own executable; tests build one).
func SetAgentBinary(path string) {
	binMu.Lock()
	defer binMu.Unlock()
	agentBinary = path
}

func getAgentBinary() string {
	binMu.Lock()
	defer binMu.Unlock()
	return agentBinary
}

// externalEnv is the environment of a run with external agents: PATH
// starts with a folder holding "acp-agent" (a link to the binary), the
// external agents are deterministic and keep their data under the run's
// root. Everything else is the process's.
func externalEnv(dataDir string) (func(string) string, error) {
	bin := getAgentBinary()
	if bin == "" {
		// The scenario command: this executable is acp-agent.
		if exe, err := os.Executable(); err == nil && !strings.HasSuffix(exe, ".test") {
			bin = exe
		}
	}
	if bin == "" {
		return nil, errors.New("this scenario runs acp-agent as an external agent: no acp-agent binary is known (scenarios.SetAgentBinary)")
	}
	root := filepath.Dir(dataDir)
	dir := filepath.Join(root, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	link := filepath.Join(dir, "acp-agent")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(bin, link); err != nil {
			return nil, err
		}
	}
	state := filepath.Join(root, "external-state")
	return func(k string) string {
		switch k {
		case "PATH":
			return dir + string(os.PathListSeparator) + os.Getenv("PATH")
		case cli.DeterministicEnv:
			return "1"
		case "XDG_STATE_HOME":
			return state
		}
		return os.Getenv(k)
	}, nil
}
