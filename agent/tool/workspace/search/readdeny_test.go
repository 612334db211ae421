package search

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

// denyEnv allows every call and denies reading the names in deny, like a
// settings rule read(.env).
type denyEnv struct {
	local.AllowAll
	deny map[string]bool
}

func (d denyEnv) ReadDenied(_, kind, name string) bool {
	return kind == workspace.KindSearch && d.deny[name]
}

// TestSearchSkipsWhatARuleDeniesReading: glob does not list and grep does
// not search a file a settings rule denies reading; grep on that file by
// name is refused with RULE_DENIES.
func TestSearchSkipsWhatARuleDeniesReading(t *testing.T) {
	f := newFixture(t)
	f.write(t, filepath.Join(f.cwd, ".env"), "API_SECRET=hunter2\n")
	f.write(t, filepath.Join(f.cwd, "config", ".env"), "API_SECRET=hunter3\n")
	f.write(t, filepath.Join(f.cwd, "notes.txt"), "API_SECRET is documented here\n")
	perms := denyEnv{deny: map[string]bool{".env": true, "config/.env": true}}
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: f.cwd, Files: local.Files{}, Permissions: perms})...)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args any) tool.Result {
		raw, _ := json.Marshal(args)
		return reg.Execute(context.Background(), tool.Invocation{CallID: "c1", Name: name, Arguments: raw, Caller: caller("s")})
	}
	tests := []struct {
		name, tool string
		args       map[string]any
		want, not  []string
		code       string
	}{
		{"glob", GlobToolName, map[string]any{"pattern": "**/.env*"}, []string{"No files match"}, []string{"config/"}, ""},
		{"glob everything", GlobToolName, map[string]any{"pattern": "**", "include_ignored": true}, []string{"notes.txt"}, []string{".env"}, ""},
		{"grep", GrepToolName, map[string]any{"pattern": "API_SECRET"}, []string{"notes.txt"}, []string{"hunter"}, ""},
		{"grep the file", GrepToolName, map[string]any{"pattern": "API_SECRET", "path": ".env"}, nil, []string{"hunter"}, workspace.CodeRuleDenies},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(tt.tool, tt.args)
			text := workspacetest.Text(res)
			if got := workspacetest.ErrCode(res); got != tt.code {
				t.Fatalf("code %q, want %q: %s", got, tt.code, text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not contain %q", text, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("%q contains %q", text, n)
				}
			}
		})
	}
}
