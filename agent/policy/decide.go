package policy

// Mode is a session mode.
type Mode string

// The session modes (ACP session mode ids).
const (
	// ModeDefault asks before every edit and every command.
	ModeDefault Mode = "default"
	// ModeAcceptEdits allows edits inside the working directory; commands
	// ask, except sandboxed ones when the sandbox keeps protected paths.
	ModeAcceptEdits Mode = "accept-edits"
	// ModePlan allows read-only tools only.
	ModePlan Mode = "plan"
	// ModeBypass asks for nothing, except paths outside the working
	// directory.
	ModeBypass Mode = "bypass"
)

// Modes are the modes in the order editors show them.
var Modes = []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass}

// Tool kinds (ACP tool kinds).
const (
	KindRead    = "read"
	KindSearch  = "search"
	KindEdit    = "edit"
	KindExecute = "execute"
	// KindOther is a tool with effects that is neither an edit nor a
	// command (an MCP tool not marked read-only).
	KindOther = "other"
)

// Kinds are every tool kind.
var Kinds = []string{KindRead, KindSearch, KindEdit, KindExecute, KindOther}

// ReadOnly reports whether kind has no effects.
func ReadOnly(kind string) bool { return kind == KindRead || kind == KindSearch }

// Class is where a call's path lies.
type Class int

const (
	// Inside: inside the working directory (or no path: a command, an MCP
	// tool).
	Inside Class = iota
	// Outside: the path, as written or as resolved, lies outside the
	// working directory (or has more than one hard link, or could not be
	// resolved).
	Outside
	// Protected: inside, but a write there can become a command (.git at
	// any depth, .acp-agent/, editor task, launch and settings files, the
	// agent's own settings and data). Only effects are protected: a read
	// of a protected path is an Inside read.
	Protected
)

// Classes are every class.
var Classes = []Class{Inside, Outside, Protected}

func (c Class) String() string { return [...]string{"inside", "outside", "protected"}[c] }

// Rule is what the settings rules say about a call (Rules combines the
// path as written and as resolved).
type Rule int

const (
	RuleNone Rule = iota
	RuleAllow
	RuleAsk
	RuleDeny
)

// RuleDecisions are every rule outcome.
var RuleDecisions = []Rule{RuleNone, RuleAllow, RuleAsk, RuleDeny}

func (r Rule) String() string { return [...]string{"none", "allow", "ask", "deny"}[r] }

// Remembered is what the person answered with "always" in this session
// for this kind of call.
type Remembered int

const (
	NotRemembered Remembered = iota
	RememberedAllow
	RememberedReject
)

// Rememberings are every remembered state.
var Rememberings = []Remembered{NotRemembered, RememberedAllow, RememberedReject}

func (r Remembered) String() string { return [...]string{"none", "always-allow", "always-reject"}[r] }

// Input is everything the decision depends on.
type Input struct {
	Mode Mode
	Kind string
	// Class of the call's path; Inside for calls without one.
	Class Class
	// Rule and RuleText: the strongest settings rule over the call (see
	// Rules).
	Rule     Rule
	RuleText string
	// Remembered is the session's "always" answer for this kind of call.
	Remembered Remembered
	// Sandboxed: a command that runs in the sandbox.
	Sandboxed bool
	// SandboxKeepsProtected: that sandbox keeps the protected paths
	// read-only (so a sandboxed command cannot plant a git hook).
	SandboxKeepsProtected bool
}

// Action is the verdict's kind.
type Action int

const (
	Allow Action = iota
	Ask
	Deny
)

func (a Action) String() string { return [...]string{"allow", "ask", "deny"}[a] }

// Codes of a denied call (the tool error codes the model sees).
const (
	CodeRuleDenies         = "RULE_DENIES"
	CodeModeForbids        = "MODE_FORBIDS"
	CodePermissionRejected = "PERMISSION_REJECTED"
)

// Verdict is the decision.
type Verdict struct {
	Action Action
	// Code is set for Deny.
	Code string
	// Reason says in words why (for logs, refusals and tests).
	Reason string
}

// Decide is the permission decision. The order is the contract:
//
//  1. a deny rule refuses, in every mode;
//  2. plan mode refuses every effect;
//  3. outside the working directory: an allow rule that names the path
//     (as written and as resolved) allows; an ask rule asks; a remembered
//     "always reject" refuses; everything else asks, in every mode
//     (bypass too);
//  4. a protected target: bypass allows; an ask rule asks; a remembered
//     "always reject" refuses; everything else asks (no allow rule, no
//     "always" covers it);
//  5. inside: bypass allows (ask rules too); an ask rule asks; an allow
//     rule allows; reads and searches are allowed; accept-edits allows
//     edits, and sandboxed commands when the sandbox keeps the protected
//     paths; a remembered answer applies; the rest asks.
func Decide(in Input) Verdict {
	effect := !ReadOnly(in.Kind)
	class := in.Class
	if class == Protected && !effect {
		class = Inside
	}
	if in.Rule == RuleDeny {
		return Verdict{Action: Deny, Code: CodeRuleDenies, Reason: "the settings rule " + quote(in.RuleText) + " denies it"}
	}
	if in.Mode == ModePlan && effect {
		return Verdict{Action: Deny, Code: CodeModeForbids, Reason: "plan mode allows read-only tools only"}
	}
	rejectRemembered := Verdict{Action: Deny, Code: CodePermissionRejected,
		Reason: "the user chose to always reject this kind of call in this session"}
	switch class {
	case Outside:
		switch {
		case in.Rule == RuleAllow:
			return Verdict{Action: Allow, Reason: "the allow rule " + quote(in.RuleText) + " names this path outside the working directory"}
		case in.Rule == RuleAsk:
			return Verdict{Action: Ask, Reason: "the settings rule " + quote(in.RuleText) + " asks"}
		case in.Remembered == RememberedReject:
			return rejectRemembered
		}
		return Verdict{Action: Ask, Reason: "the path is outside the working directory"}
	case Protected:
		switch {
		case in.Mode == ModeBypass:
			return Verdict{Action: Allow, Reason: "bypass mode allows protected paths"}
		case in.Rule == RuleAsk:
			return Verdict{Action: Ask, Reason: "the settings rule " + quote(in.RuleText) + " asks"}
		case in.Remembered == RememberedReject:
			return rejectRemembered
		}
		return Verdict{Action: Ask, Reason: "the path is protected: no rule and no \"always\" answer covers it"}
	}
	switch {
	case in.Mode == ModeBypass:
		return Verdict{Action: Allow, Reason: "bypass mode"}
	case in.Rule == RuleAsk:
		return Verdict{Action: Ask, Reason: "the settings rule " + quote(in.RuleText) + " asks"}
	case in.Rule == RuleAllow:
		return Verdict{Action: Allow, Reason: "the settings rule " + quote(in.RuleText) + " allows it"}
	case !effect:
		return Verdict{Action: Allow, Reason: "reads and searches inside the working directory are allowed"}
	case in.Mode == ModeAcceptEdits && in.Kind == KindEdit:
		return Verdict{Action: Allow, Reason: "accept-edits mode allows edits inside the working directory"}
	case in.Mode == ModeAcceptEdits && in.Kind == KindExecute && in.Sandboxed && in.SandboxKeepsProtected:
		return Verdict{Action: Allow, Reason: "accept-edits mode allows sandboxed commands"}
	case in.Remembered == RememberedReject:
		return rejectRemembered
	case in.Remembered == RememberedAllow:
		return Verdict{Action: Allow, Reason: "the user chose to always allow this kind of call in this session"}
	}
	why := "the mode asks before this kind of call"
	if in.Mode == ModeAcceptEdits && in.Kind == KindExecute && in.Sandboxed {
		why = "the sandbox cannot keep .git and the other protected paths read-only, so accept-edits asks before sandboxed commands"
	}
	return Verdict{Action: Ask, Reason: why}
}

func quote(s string) string { return "\"" + s + "\"" }
