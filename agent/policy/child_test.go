package policy

import "testing"

func TestChildMode(t *testing.T) {
	tests := []struct {
		root, asked Mode
		grant       string
		want        Mode
	}{
		{ModeAcceptEdits, "", GrantProject, ModeAcceptEdits},
		{ModeBypass, "", GrantUser, ModeBypass},
		// Narrower than the root: as asked, whoever wrote it.
		{ModeAcceptEdits, ModePlan, GrantProject, ModePlan},
		{ModeAcceptEdits, ModeDefault, GrantProject, ModeDefault},
		{ModeBypass, ModeDefault, GrantUser, ModeDefault},
		{ModeBypass, ModeAcceptEdits, GrantProject, ModeAcceptEdits},
		{ModeDefault, ModeDefault, GrantProject, ModeDefault},
		// Broader: the person's own definition only.
		{ModeDefault, ModeAcceptEdits, GrantProject, ModeDefault},
		{ModeDefault, ModeBypass, GrantProject, ModeDefault},
		{ModeAcceptEdits, ModeBypass, GrantProject, ModeAcceptEdits},
		{ModeDefault, ModeAcceptEdits, "", ModeDefault},
		{ModeDefault, ModeAcceptEdits, GrantUser, ModeAcceptEdits},
		{ModeDefault, ModeBypass, GrantUser, ModeBypass},
		// A plan root keeps every child in plan.
		{ModePlan, ModeBypass, GrantUser, ModePlan},
		{ModePlan, ModeAcceptEdits, GrantUser, ModePlan},
		{ModePlan, ModeDefault, GrantProject, ModePlan},
		// A mode this build does not know never widens.
		{ModeBypass, "yolo", GrantUser, ModeDefault},
		{ModePlan, "yolo", GrantUser, ModePlan},
	}
	for _, tt := range tests {
		if got := ChildMode(tt.root, tt.asked, tt.grant); got != tt.want {
			t.Errorf("ChildMode(%q, %q, %q) = %q, want %q", tt.root, tt.asked, tt.grant, got, tt.want)
		}
	}
	// Whatever the inputs, a project's definition is never broader than
	// the root.
	for _, root := range Modes {
		for _, asked := range append([]Mode{""}, Modes...) {
			if got := ChildMode(root, asked, GrantProject); breadth(got) > breadth(root) {
				t.Errorf("ChildMode(%q, %q, project) = %q, broader than the root", root, asked, got)
			}
		}
	}
}
