package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
)

// TestBashSandboxed: under a sandbox a write outside the cwd fails and
// the result says the sandbox may be why and how to ask to run outside
// it; the permission request says whether the command runs sandboxed; a
// command the kernel cannot sandbox is refused, never run unsandboxed.
func TestBashSandboxed(t *testing.T) {
	if sandbox.ProbeKernel().ABI < 1 {
		t.Skip("this kernel has no Landlock: the sandbox cannot be tested here")
	}
	tests := []struct {
		name          string
		args          map[string]any
		probe         func() sandbox.Support
		wantSandboxed bool
		wantCreated   bool
		wantText      []string
		wantCode      string
	}{
		{name: "outside write stopped", args: map[string]any{"command": "touch ../outside.txt"}, wantSandboxed: true,
			wantText: []string{"Permission denied", "[Exit code 1]", "[The command ran in a sandbox (writes only under ", `run it again with "sandbox": false`}},
		{name: "run outside the sandbox", args: map[string]any{"command": "touch ../outside.txt", "sandbox": false}, wantCreated: true,
			wantText: []string{"(no output)\n[Exit code 0]"}},
		{name: "sandbox unavailable", args: map[string]any{"command": "touch ../outside.txt"},
			probe: func() sandbox.Support { return sandbox.Support{} }, wantSandboxed: true, wantCode: sandbox.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			cwd, tmp := filepath.Join(base, "work"), filepath.Join(base, "tmp")
			for _, d := range []string{cwd, tmp} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			perms := &local.Scripted{}
			sb := sandbox.New(sandbox.Policy{TempDir: tmp}, sandbox.Options{Probe: tt.probe})
			env := workspace.Env{Cwd: cwd, Commands: local.Commands{Sandbox: sb}, Permissions: perms}
			res := run(t, t.Context(), env, tt.args, nil)
			text := resultText(res)
			if got := errorCode(res); got != tt.wantCode {
				t.Fatalf("result %q has code %q, want %q", text, got, tt.wantCode)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("result %q does not contain %q", text, w)
				}
			}
			reqs := perms.Requests()
			if len(reqs) != 1 || reqs[0].Sandboxed != tt.wantSandboxed {
				t.Errorf("permission requests = %+v, want one with Sandboxed %v", reqs, tt.wantSandboxed)
			}
			_, err := os.Stat(filepath.Join(base, "outside.txt"))
			if created := err == nil; created != tt.wantCreated {
				t.Errorf("outside.txt created = %v, want %v", created, tt.wantCreated)
			}
		})
	}
}

func resultText(r tool.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func errorCode(r tool.Result) string {
	if r.Error != nil {
		return r.Error.Code
	}
	return ""
}
