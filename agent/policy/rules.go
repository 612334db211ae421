package policy

import "github.com/acp-agent/acp-agent/agent/settings"

// Matcher is the settings rules (a *settings.Policy).
type Matcher interface {
	Decide(settings.Call) (settings.Decision, string)
}

// Subject is what the rules are matched against: the path as the call
// wrote it and the path it resolves to (symlinks evaluated), each
// relative to the working directory when inside it (the resolved one to
// the real working directory), else absolute. Resolved is "" when there
// is nothing to resolve (a command, an MCP tool).
type Subject struct {
	Lexical, Resolved string
}

// Rules applies the settings rules to a call whose subject is s: a deny
// or an ask rule matching either the written or the resolved path
// decides (the strongest wins); an allow needs both to match (an allow
// rule for src/ does not cover a symlink under src/ to a file elsewhere).
// named says that only an allow rule with a pattern applies, never one
// for the whole tool (outside and protected paths).
func Rules(m Matcher, tool, kind string, s Subject, named bool) (Rule, string) {
	if m == nil {
		return RuleNone, ""
	}
	lex, lexText := m.Decide(settings.Call{Tool: tool, Kind: kind, Subject: s.Lexical, Named: named})
	if s.Resolved == "" || s.Resolved == s.Lexical {
		return fromSettings(lex), lexText
	}
	res, resText := m.Decide(settings.Call{Tool: tool, Kind: kind, Subject: s.Resolved, Named: named})
	switch {
	case lex == settings.Deny:
		return RuleDeny, lexText
	case res == settings.Deny:
		return RuleDeny, resText
	case lex == settings.Ask:
		return RuleAsk, lexText
	case res == settings.Ask:
		return RuleAsk, resText
	case lex == settings.Allow && res == settings.Allow:
		return RuleAllow, lexText
	}
	return RuleNone, ""
}

func fromSettings(d settings.Decision) Rule {
	switch d {
	case settings.Allow:
		return RuleAllow
	case settings.Ask:
		return RuleAsk
	case settings.Deny:
		return RuleDeny
	}
	return RuleNone
}
