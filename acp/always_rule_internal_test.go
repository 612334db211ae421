package acp

import (
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// TestEditAlwaysRule: the rule an "always allow" on an edit saves covers
// the file's directory (a file at the top: that file only, not the same
// name elsewhere), never a path outside the project or a protected one,
// and nothing when the path would read as a pattern.
func TestEditAlwaysRule(t *testing.T) {
	edit := func(p string) settings.Call {
		return settings.Call{Tool: "write", Kind: workspace.KindEdit, Subject: p}
	}
	tests := []struct {
		req            workspace.PermissionRequest
		rule, option   string
		covers, misses []string
	}{
		{workspace.PermissionRequest{Tool: "edit", Kind: workspace.KindEdit, Subject: "src/pkg/a.go"}, "edit(src/pkg/**)",
			"Always allow edits under src/pkg/ in this project", []string{"src/pkg/b.go", "src/pkg/x/y.go"}, []string{"src/a.go", "src/pkgx/a.go", "pkg/a.go"}},
		{workspace.PermissionRequest{Tool: "write", Kind: workspace.KindEdit, Subject: "main.go"}, "edit(./main.go)",
			"Always allow edits of main.go in this project", []string{"main.go", "./main.go"}, []string{"cmd/main.go", "other.go"}},
		{workspace.PermissionRequest{Tool: "write", Kind: workspace.KindEdit, Subject: "src/[x]/a.go"}, "", "", nil, nil},
		{workspace.PermissionRequest{Tool: "write", Kind: workspace.KindEdit, Subject: "docs/*.md"}, "", "", nil, nil},
		{workspace.PermissionRequest{Tool: "write", Kind: workspace.KindEdit, Subject: "/etc/hosts", OutsideCwd: true}, "", "", nil, nil},
		{workspace.PermissionRequest{Tool: "write", Kind: workspace.KindEdit, Subject: ".git/config", Protected: "hooks"}, "", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.req.Subject, func(t *testing.T) {
			if got := alwaysRule(tt.req); got != tt.rule {
				t.Fatalf("alwaysRule = %q, want %q", got, tt.rule)
			}
			if tt.rule == "" {
				return
			}
			if got := permissionOptions(tt.req, true)[1].Name; got != tt.option {
				t.Errorf("option %q, want %q", got, tt.option)
			}
			r, err := settings.ParseRule(tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.covers {
				if !r.Matches(edit(p), true) {
					t.Errorf("%s does not cover %s", tt.rule, p)
				}
			}
			for _, p := range tt.misses {
				if r.Matches(edit(p), true) {
					t.Errorf("%s covers %s", tt.rule, p)
				}
			}
		})
	}
}
