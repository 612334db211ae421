package app

import (
	"reflect"
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
)

func TestSandboxPolicyFromFlagAndSettings(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		flag bool
		s    settings.Sandbox
		want *sandbox.Policy
	}{
		{"off", false, settings.Sandbox{}, nil},
		{"disabled in settings", false, settings.Sandbox{Enabled: &no, Network: &yes}, nil},
		{"flag", true, settings.Sandbox{}, &sandbox.Policy{}},
		{"settings", false, settings.Sandbox{Enabled: &yes, WritablePaths: []string{"/cache"}, Network: &yes},
			&sandbox.Policy{Writable: []string{"/cache"}, Network: true}},
		{"flag wins over a disabled setting", true, settings.Sandbox{Enabled: &no}, &sandbox.Policy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SandboxPolicy(tt.flag, tt.s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SandboxPolicy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSessionSandboxOnlyTightens: a session's sandbox is the process's,
// with the network cut when its (merged) settings cut it; without a
// process sandbox, the settings turn one on.
func TestSessionSandboxOnlyTightens(t *testing.T) {
	yes, no := true, false
	process := &sandbox.Policy{Writable: []string{"/cache"}, Network: true, TempDir: "/t"}
	tests := []struct {
		name    string
		process *sandbox.Policy
		s       settings.Sandbox
		want    *sandbox.Policy
	}{
		{"none", nil, settings.Sandbox{}, nil},
		{"project turns it on", nil, settings.Sandbox{Enabled: &yes}, &sandbox.Policy{}},
		{"on with the user's paths", nil, settings.Sandbox{Enabled: &yes, WritablePaths: []string{"/cache"}, Network: &yes}, &sandbox.Policy{Writable: []string{"/cache"}, Network: true}},
		{"process kept", process, settings.Sandbox{}, process},
		{"process kept when settings say off", process, settings.Sandbox{Enabled: &no, Network: &yes}, process},
		{"network cut", process, settings.Sandbox{Network: &no}, &sandbox.Policy{Writable: []string{"/cache"}, TempDir: "/t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sessionSandbox(tt.process, tt.s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sessionSandbox = %+v, want %+v", got, tt.want)
			}
		})
	}
	if !process.Network {
		t.Error("the process policy was changed")
	}
}
