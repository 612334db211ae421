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
			if got := sandboxPolicy(tt.flag, tt.s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sandboxPolicy = %+v, want %+v", got, tt.want)
			}
		})
	}
}
