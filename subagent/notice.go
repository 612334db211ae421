package subagent

// This file builds the settlement notice a continuable child's parent
// receives when an activation settles (subagent-contract.md §2.10).

import (
	"fmt"
	"unicode/utf16"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
)

// Notice texts.
const (
	textClosingMessage   = "Its closing message:"
	textNoClosingMessage = "It left no closing message."
)

// noticeSummary returns the first line of a settlement notice.
func noticeSummary(childID, stop string) string {
	switch stop {
	case driver.StopCompleted:
		return fmt.Sprintf("Background subagent %s finished and will do no further work unless you send it more.", childID)
	case driver.StopAborted:
		return fmt.Sprintf("Background subagent %s was stopped before it finished.", childID)
	case driver.StopMaxTokens:
		return fmt.Sprintf("Background subagent %s ran out of room before it finished.", childID)
	case driver.StopRefusal:
		return fmt.Sprintf("Background subagent %s declined the task.", childID)
	case driver.StopError:
		return fmt.Sprintf("Background subagent %s failed before it finished.", childID)
	case driver.StopMaxTurns:
		return fmt.Sprintf("Background subagent %s reached its turn limit (maxTurns) before it finished.", childID)
	case driver.StopBudget:
		return fmt.Sprintf("Background subagent %s reached its budget before it finished (stop reason budget).", childID)
	case driver.StopTimeout:
		return fmt.Sprintf("Background subagent %s ran out of time before it finished (stop reason timeout).", childID)
	}
	return fmt.Sprintf("Background subagent %s ended abnormally (%s) before it finished.", childID, stop)
}

// SettlementNotice returns the user-role message announcing that child
// settled with stop reason stop and final output (possibly empty).
func SettlementNotice(childID, stop string, output []session.Block) session.Message {
	summary := noticeSummary(childID, stop)
	content := []session.Block{session.Text(summary)}
	if len(output) == 0 {
		content = append(content, session.Text(textNoClosingMessage))
	} else {
		content = append(content, session.Text(textClosingMessage))
		content = append(content, output...)
	}
	return session.Message{
		Role:    session.RoleUser,
		Content: content,
		Source: session.Source{
			Kind:            session.SourceSubagentSettled,
			Form:            "notice",
			Summary:         BoundSummary(summary),
			SenderSessionID: childID,
		},
	}
}

// summaryLimit bounds a notice summary, in UTF-16 code units (the unit the
// reference implementation counts in).
const summaryLimit = 120

// BoundSummary returns s unchanged when it has at most 120 UTF-16 code
// units, else its first 119 units followed by "…". A surrogate pair is
// never split: if unit 119 would cut one, the pair is dropped whole.
func BoundSummary(s string) string {
	units := utf16.Encode([]rune(s))
	if len(units) <= summaryLimit {
		return s
	}
	cut := units[:summaryLimit-1]
	if n := len(cut); n > 0 && utf16.IsSurrogate(rune(cut[n-1])) && cut[n-1] < 0xdc00 {
		cut = cut[:n-1]
	}
	return string(utf16.Decode(cut)) + "…"
}

// ReportMessage frames a child's report for its parent (§2.6).
func ReportMessage(childID string, content []session.Block) session.Message {
	blocks := append([]session.Block{session.Text(fmt.Sprintf("Background subagent %s reported:", childID))}, content...)
	return session.Message{
		Role:    session.RoleUser,
		Content: blocks,
		Source:  session.Source{Kind: session.SourceSubagentReport, Form: "relay", SenderSessionID: childID},
	}
}
