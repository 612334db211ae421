package compact

import (
	"strings"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// KeepFraction is the share of the window the turns kept after a summary
// may fill; the rest is room for the summary and the next answers.
const KeepFraction = 0.3

// Target is the share of the window a compaction aims for: stubbing alone
// is enough when it brings the context under it.
const Target = 0.6

// Plan is where to cut a history.
type Plan struct {
	// StubUpTo is the seq of the last message whose tool results are
	// stubbed (phase one); 0 when none.
	StubUpTo int64
	// UpTo is the seq of the last message the summary replaces (phase
	// two); Keep are the messages after it.
	UpTo int64
	Keep []session.SurfaceMessage
	// Covered are the messages the summary replaces.
	Covered []session.SurfaceMessage
}

// boundary reports whether a kept view may start at m: a message from the
// person or another agent, or an assistant message (its tool results
// follow it), never a tool result without its call.
func boundary(m session.SurfaceMessage) bool {
	return m.Message.Source.Kind != session.SourceTool
}

// Cut plans a compaction of hist so that the kept turns fit keep tokens.
// The newest boundary is always kept when force is false and the history
// has more than one boundary; with force (manual /compact between turns)
// everything may be summarized. ok is false when there is nothing to cut.
func Cut(hist []session.SurfaceMessage, keep int, force bool) (Plan, bool) {
	if len(hist) == 0 {
		return Plan{}, false
	}
	from := len(hist) // index of the first kept message
	if !force {
		size := 0
		for i := len(hist) - 1; i >= 0; i-- {
			size += budget.EstimateBlocks(hist[i].Message.Content) + 4
			if boundary(hist[i]) && (size <= keep || from == len(hist)) {
				from = i
			}
			if size > keep && from < len(hist) {
				break
			}
		}
	}
	if from == 0 {
		return Plan{}, false // nothing older than what must be kept
	}
	p := Plan{UpTo: hist[from-1].Seq, Covered: hist[:from], Keep: hist[from:]}
	p.StubUpTo = p.UpTo
	return p, true
}

// StubEnough reports whether stubbing the tool results older than the last
// boundary of hist brings the history under target tokens, and the seq to
// stub up to.
func StubEnough(hist []session.SurfaceMessage, fixed, target int) (int64, int, bool) {
	last := -1
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Message.Source.Kind == session.SourceUser {
			last = i
			break
		}
	}
	if last <= 0 {
		return 0, 0, false
	}
	upTo := hist[last-1].Seq
	n := fixed
	for i, m := range hist {
		if i < last && m.Message.Source.Kind == session.SourceTool {
			n += 4 + budget.EstimateText(stubText(m))
			continue
		}
		n += 4 + budget.EstimateBlocks(m.Message.Content)
	}
	return upTo, n, n <= target
}

func stubText(session.SurfaceMessage) string {
	// A stub is about a hundred bytes plus the arguments; the exact text
	// is made by session.Stub when the view is derived.
	return strings.Repeat("x", 120)
}

// System is the system prompt of the summary request.
const System = "You compact a coding conversation between a person and an AI coding agent so the agent can continue the work without the earlier messages. " +
	"Write a faithful, dense summary; never invent anything. Answer with the summary only."

// Instructions is the structured request appended after the history.
const Instructions = `Summarize the conversation above for the agent that will continue it. Use exactly these sections:

## Intent
What the person wants, in their own terms, including constraints and preferences.

## Decisions
Decisions made and why, and approaches ruled out.

## Files touched
Every file read, created or changed, with what was done to it.

## State
What is done, what is in progress, errors still open, and any facts the next steps depend on (commands, names, values).

## Next steps
What the agent should do next, in order.`

// Request builds the summary request over the covered messages. Their old
// tool results are stubbed when the covered messages alone would pass
// limit tokens (0: never), and texts still too long are cut in their
// middle (Fit).
func Request(base model.Request, covered []session.SurfaceMessage, extra string, limit int) model.Request {
	ask := Instructions
	if s := strings.TrimSpace(extra); s != "" {
		ask += "\n\nThe person adds these instructions for the summary:\n" + s
	}
	// Old tool results are stubbed here too, so the summary request itself
	// fits where the conversation no longer does.
	view := append([]session.SurfaceMessage(nil), covered...)
	if limit > 0 && budget.EstimateMessages(model.FromSurface(covered)) > limit {
		view = session.StubResults(covered, covered[len(covered)-1].Seq)
	}
	view = append(view, session.SurfaceMessage{Seq: -1, Message: session.Message{Role: session.RoleUser, Content: []session.Block{session.Text(ask)}}})
	msgs := model.FromSurface(view)
	req := base
	req.System = System
	req.Messages = msgs
	req.Tools = nil
	if limit > 0 {
		// A text too long on its own (a large paste) is cut in its
		// middle, as in the conversation's own requests (elide.go).
		if fitted, _, ok := Fit(req, limit); ok {
			req = fitted
		}
	}
	return req
}
