package scenarios

// This file defines a scenario's sandbox section: local commands run in
// the Landlock sandbox, with $CWD/.tmp as their temp dir so the
// recording names only paths under $CWD.

import (
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
)

// SandboxSpec is the sandbox section of a scenario.
type SandboxSpec struct {
	// Network allows the network in the sandbox.
	Network bool
}

func (p parser) sandbox(n *yaml.Node) (*SandboxSpec, error) {
	f, err := p.fields(n, "sandbox", "network")
	if err != nil {
		return nil, err
	}
	s := &SandboxSpec{}
	if v, ok := f["network"]; ok {
		if s.Network, err = p.boolean(v, "sandbox.network"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// policy is the sandbox policy of a run in cwd.
func (s *SandboxSpec) policy(cwd string) *sandbox.Policy {
	if s == nil {
		return nil
	}
	return &sandbox.Policy{Network: s.Network, TempDir: filepath.Join(cwd, ".tmp")}
}
