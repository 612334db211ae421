package policy

// This file defines the mode of a child (subagent) session: the mode its
// agent definition asked for, bounded by its root session's mode and by
// who wrote the definition.

// Who wrote the definition a child's permission mode comes from.
const (
	// GrantProject: a definition in the project (a file in the
	// repository). It may narrow the root session's mode, never widen it.
	GrantProject = "project"
	// GrantUser: the person's own definition (their config folder). It
	// may also widen the root's mode, except out of plan.
	GrantUser = "user"
)

// breadth orders the modes from the narrowest: plan refuses every effect,
// default asks before each, accept-edits allows edits, bypass asks for
// nothing. An unknown mode is narrower than default (it is never used to
// widen).
func breadth(m Mode) int {
	switch m {
	case ModePlan:
		return 0
	case ModeAcceptEdits:
		return 2
	case ModeBypass:
		return 3
	}
	return 1
}

// Known reports whether m is one of Modes.
func Known(m Mode) bool {
	for _, k := range Modes {
		if k == m {
			return true
		}
	}
	return false
}

// ChildMode is the mode a child's permission decision uses: root is its
// root session's current mode, asked the mode its definition recorded
// ("" to follow the root) and grant who wrote the definition
// (GrantProject or GrantUser). The order is the contract:
//
//  1. no mode asked: the root's;
//  2. a root in plan mode keeps every child in plan (the person made the
//     session read-only);
//  3. a mode no broader than the root's applies as asked (a reviewer in
//     plan under an accept-edits root is refused its edits);
//  4. a broader mode applies only when the person wrote the definition
//     (GrantUser); a project's definition gets the root's mode (an
//     unknown grant or mode counts as a project's).
func ChildMode(root, asked Mode, grant string) Mode {
	switch {
	case asked == "":
		return root
	case root == ModePlan:
		return ModePlan
	case !Known(asked):
		// Not from this build's definitions: never wider than default.
		if breadth(root) < breadth(ModeDefault) {
			return root
		}
		return ModeDefault
	case breadth(asked) <= breadth(root):
		return asked
	case grant == GrantUser:
		return asked
	}
	return root
}
