package subagent

import "testing"

// A child in plan mode, or whose tool filter leaves it no tool that
// changes files, cannot write: it gets no worktree.
func TestCanWrite(t *testing.T) {
	tests := []struct {
		mode string
		f    *ToolFilter
		want bool
	}{
		{"", nil, true},
		{"plan", nil, false},
		{"acceptEdits", nil, true},
		{"", &ToolFilter{Allow: []string{"read", "grep", "glob", "report"}}, false},
		{"", &ToolFilter{Allow: []string{"read", "edit"}}, true},
		{"", &ToolFilter{Deny: []string{"edit", "write", "bash"}}, false},
		{"", &ToolFilter{Deny: []string{"edit", "write"}}, true},
		{"", &ToolFilter{Allow: []string{"bash"}, Deny: []string{"bash"}}, false},
	}
	for _, tt := range tests {
		if got := canWrite(tt.mode, tt.f); got != tt.want {
			t.Errorf("canWrite(%q, %+v) = %v, want %v", tt.mode, tt.f, got, tt.want)
		}
	}
}
