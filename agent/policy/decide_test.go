package policy

import (
	"fmt"
	"testing"
)

// want is what a promise says about the inputs it covers.
type want struct {
	action Action
	code   string
}

// promise is one statement of the README (quoted in its comment) about
// the decision: covers says whether it speaks about in, w what it says.
type promise struct {
	name   string
	covers func(in Input) bool
	w      want
}

var (
	allow    = want{action: Allow}
	ask      = want{action: Ask}
	denyRule = want{action: Deny, code: CodeRuleDenies}
	forbid   = want{action: Deny, code: CodeModeForbids}
	rejectIt = want{action: Deny, code: CodePermissionRejected}
)

func effect(in Input) bool { return !ReadOnly(in.Kind) }

// where is the class the decision treats in as: a read of a protected
// path is a read inside (only effects are protected).
func where(in Input) Class {
	if in.Class == Protected && !effect(in) {
		return Inside
	}
	return in.Class
}

func inside(in Input) bool    { return where(in) == Inside }
func outside(in Input) bool   { return where(in) == Outside }
func protected(in Input) bool { return where(in) == Protected }
func notPlanEffect(in Input) bool {
	return in.Rule != RuleDeny && !(in.Mode == ModePlan && effect(in))
}

// modeAllows: the mode table allows in without a question (README "Mode"
// table, inside the working directory, no rule).
func modeAllows(in Input) bool {
	switch {
	case !effect(in), in.Mode == ModeBypass:
		return true
	case in.Mode == ModeAcceptEdits && in.Kind == KindEdit:
		return true
	case in.Mode == ModeAcceptEdits && in.Kind == KindExecute && in.Sandboxed && in.SandboxKeepsProtected:
		return true
	}
	return false
}

var promises = []promise{
	// README, rules table: "deny — refused (RULE_DENIES), never asked", in
	// every mode, for every class and kind.
	{"deny rule refuses everywhere", func(in Input) bool { return in.Rule == RuleDeny }, denyRule},
	// README, modes table: "plan — write / edit, bash, other MCP tools:
	// refused (MODE_FORBIDS)"; rules table: under plan an ask or allow
	// rule leaves "others MODE_FORBIDS". Outside and protected paths too.
	{"plan refuses effects", func(in Input) bool {
		return in.Rule != RuleDeny && in.Mode == ModePlan && effect(in)
	}, forbid},
	// README, modes table: "read-only tools (read / glob / grep,
	// read-only MCP): allowed" in every mode, inside the working
	// directory; rules table: an allow rule allows. A read of .git/config
	// is allowed (protected paths are about writes).
	{"reads inside are allowed", func(in Input) bool {
		return !effect(in) && inside(in) && (in.Rule == RuleNone || in.Rule == RuleAllow)
	}, allow},
	// README, rules table: "ask — asked, whatever the mode would allow"
	// (default / accept-edits, and read-only tools in plan), "bypass —
	// allowed" for an ask rule inside the working directory.
	{"ask rule asks, except bypass inside", func(in Input) bool {
		return in.Rule == RuleAsk && notPlanEffect(in) && !(in.Mode == ModeBypass && inside(in)) &&
			!(in.Mode == ModeBypass && protected(in))
	}, ask},
	// README, rules table: "allow — allowed without asking" inside the
	// working directory (not under plan for effects).
	{"allow rule allows inside", func(in Input) bool {
		return in.Rule == RuleAllow && inside(in) && notPlanEffect(in)
	}, allow},
	// README: "A path outside the working directory (also through .. or a
	// symlink) is always asked about, even after "always allow" and in
	// bypass mode, unless a user-level rule names it."
	{"outside asks, bypass and always-allow too", func(in Input) bool {
		return outside(in) && in.Rule == RuleNone && notPlanEffect(in) && in.Remembered != RememberedReject
	}, ask},
	{"an allow rule naming an outside path allows it", func(in Input) bool {
		return outside(in) && in.Rule == RuleAllow && notPlanEffect(in)
	}, allow},
	// README, "Protected paths": "writing there asks in every mode but
	// bypass (also in accept-edits and after "always allow edits")";
	// issue 32: no allow rule (as "always" saves them, edit(src/**)) covers
	// a protected target.
	{"protected asks in every mode but bypass, allow rules and always-allow too", func(in Input) bool {
		return protected(in) && notPlanEffect(in) && in.Mode != ModeBypass &&
			(in.Rule == RuleNone || in.Rule == RuleAllow) && in.Remembered != RememberedReject
	}, ask},
	{"bypass allows protected", func(in Input) bool {
		return protected(in) && in.Mode == ModeBypass && in.Rule != RuleDeny
	}, allow},
	// README, modes table: "bypass — allowed" for everything inside the
	// working directory; rules table: "bypass — allowed" under an ask rule.
	{"bypass allows inside", func(in Input) bool {
		return inside(in) && in.Mode == ModeBypass && in.Rule != RuleDeny
	}, allow},
	// README, modes table, inside, no rule: default asks for write / edit,
	// bash and other MCP tools; accept-edits allows write / edit and asks
	// for bash and other MCP tools, except "a sandboxed command: allowed"
	// — issue 32: only where the sandbox keeps .git and the other protected
	// paths read-only, else accept-edits asks before sandboxed commands.
	{"mode table: what the mode allows runs", func(in Input) bool {
		return inside(in) && in.Rule == RuleNone && modeAllows(in)
	}, allow},
	{"mode table: the rest asks when nothing is remembered", func(in Input) bool {
		return inside(in) && in.Rule == RuleNone && !modeAllows(in) && in.Mode != ModePlan && in.Remembered == NotRemembered
	}, ask},
	// README: "Always allow" without a rule to save "holds for the
	// session": the same kind of call inside runs unasked.
	{"always allow holds for the session", func(in Input) bool {
		return inside(in) && in.Rule == RuleNone && notPlanEffect(in) && in.Remembered == RememberedAllow
	}, allow},
	// README: "Always reject"; a remembered "always reject" rejects
	// without asking (PERMISSION_REJECTED) what would be asked: inside
	// calls the mode asks about, outside and protected paths with no
	// ask or allow rule.
	{"always reject rejects what would ask", func(in Input) bool {
		if in.Remembered != RememberedReject || !notPlanEffect(in) {
			return false
		}
		switch where(in) {
		case Inside:
			return in.Rule == RuleNone && !modeAllows(in)
		case Outside:
			return in.Rule == RuleNone
		}
		return in.Mode != ModeBypass && (in.Rule == RuleNone || in.Rule == RuleAllow)
	}, rejectIt},
}

// every enumerates every combination of the inputs.
func every(f func(Input)) {
	for _, m := range Modes {
		for _, k := range Kinds {
			for _, c := range Classes {
				for _, r := range RuleDecisions {
					for _, rem := range Rememberings {
						for _, sb := range []bool{false, true} {
							for _, keeps := range []bool{false, true} {
								f(Input{Mode: m, Kind: k, Class: c, Rule: r, RuleText: "rule", Remembered: rem, Sandboxed: sb, SandboxKeepsProtected: keeps})
							}
						}
					}
				}
			}
		}
	}
}

func (in Input) String() string {
	return fmt.Sprintf("mode=%s kind=%s class=%s rule=%s remembered=%s sandboxed=%v keeps=%v",
		in.Mode, in.Kind, in.Class, in.Rule, in.Remembered, in.Sandboxed, in.SandboxKeepsProtected)
}

// TestDecideKeepsEveryPromise: over every combination of mode, kind,
// class, rule, remembered answer and sandbox, every promise that speaks
// about it holds, and at least one does (the promises decide the whole
// table, so no combination is left to chance).
func TestDecideKeepsEveryPromise(t *testing.T) {
	n := 0
	every(func(in Input) {
		n++
		got := Decide(in)
		covered := false
		for _, p := range promises {
			if !p.covers(in) {
				continue
			}
			covered = true
			if got.Action != p.w.action || got.Code != p.w.code {
				t.Errorf("%v: %s %s (%s), but %q says %s %s", in, got.Action, got.Code, got.Reason, p.name, p.w.action, p.w.code)
			}
		}
		if !covered {
			t.Errorf("%v: no promise covers it (decided %s %s)", in, got.Action, got.Code)
		}
		if got.Reason == "" {
			t.Errorf("%v: no reason", in)
		}
	})
	if want := len(Modes) * len(Kinds) * len(Classes) * len(RuleDecisions) * len(Rememberings) * 4; n != want {
		t.Fatalf("enumerated %d combinations, want %d", n, want)
	}
}

// TestSandboxMattersOnlyForCommands: the sandbox flags change nothing but
// commands.
func TestSandboxMattersOnlyForCommands(t *testing.T) {
	every(func(in Input) {
		if in.Kind == KindExecute {
			return
		}
		plain := in
		plain.Sandboxed, plain.SandboxKeepsProtected = false, false
		if a, b := Decide(in), Decide(plain); a.Action != b.Action || a.Code != b.Code {
			t.Errorf("%v: %s, without the sandbox flags %s", in, a.Action, b.Action)
		}
	})
}

// TestDecideExamples: the holes issue 32 names, as single decisions.
func TestDecideExamples(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{"accept-edits, sandbox that cannot keep .git: the command asks",
			Input{Mode: ModeAcceptEdits, Kind: KindExecute, Sandboxed: true}, ask},
		{"accept-edits, sandbox keeping .git read-only: the command runs",
			Input{Mode: ModeAcceptEdits, Kind: KindExecute, Sandboxed: true, SandboxKeepsProtected: true}, allow},
		{"edit(src/**) does not cover src/x/.git/hooks/pre-commit",
			Input{Mode: ModeAcceptEdits, Kind: KindEdit, Class: Protected, Rule: RuleAllow, Remembered: RememberedAllow}, ask},
		{"bypass still asks outside", Input{Mode: ModeBypass, Kind: KindEdit, Class: Outside}, ask},
		{"a protected read is a read", Input{Mode: ModeDefault, Kind: KindRead, Class: Protected}, allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.in)
			if got.Action != tt.want.action || got.Code != tt.want.code {
				t.Errorf("%s %s (%s), want %s %s", got.Action, got.Code, got.Reason, tt.want.action, tt.want.code)
			}
		})
	}
}
