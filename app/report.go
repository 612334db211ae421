package app

// This file folds what one exec run did, for its result line: the turns
// the run's prompt started in the root session, the usage and cost per
// model of the session and of each subagent, and each subagent's outcome
// (the end of its last turn), read from the logs (the authority).

import (
	"context"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app/headless"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

// Child outcomes of ExecChild.Outcome.
const (
	ChildCompleted = "completed"
	ChildFailed    = "failed"
	ChildCancelled = "cancelled"
	ChildLimit     = "limit"
	ChildStopped   = "stopped" // no turn ended: stopped at exit, or never ran
)

// ModelUsage is the usage of one model (route), priced.
type ModelUsage struct {
	Model string `json:"model"`
	budget.Usage
}

// ExecChild is one subagent of the run's session tree.
type ExecChild struct {
	SessionID string `json:"sessionId"`
	ParentID  string `json:"parentId"`
	Label     string `json:"label,omitempty"`
	Mode      string `json:"mode,omitempty"`
	// Outcome is one of the Child* constants; StopReason the kind of its
	// last turn end; Error the cause of a failed one.
	Outcome    string       `json:"outcome"`
	StopReason string       `json:"stopReason,omitempty"`
	Error      string       `json:"error,omitempty"`
	Usage      budget.Usage `json:"usage"`
	Models     []ModelUsage `json:"models,omitempty"`
}

// ExecReport is what a run did beyond its stop reason.
type ExecReport struct {
	// Turns counts the root session's turns that started during the run
	// (the prompt's, and those its subagents' notices started).
	Turns int
	// Usage is the tree's (the session's part since the run began, its
	// subagents' whole); Models the same per model.
	Usage  budget.Usage
	Models []ModelUsage
	// Own is the root session's usage during the run.
	Own      budget.Usage
	Children []ExecChild
}

// ExecResult is how an exec run ended (headless.Result) and what it did.
type ExecResult struct {
	headless.Result
	Report ExecReport
	// Started is set when the run got as far as its prompt.
	Started bool
}

// report folds the run of session root from event mark on (the run's
// part of a resumed log); subagents created before createdSince (a
// resumed session's earlier children) are left out.
func (a *App) report(ctx context.Context, root string, mark int, createdSince int64) ExecReport {
	var rep ExecReport
	models := map[string]*budgets.RouteTokens{}
	var order []string
	fold := func(events []session.Event, seed int) (budget.Usage, []ModelUsage) {
		var c budgets.Counter
		c.Fold(events, seed)
		l := c.Ledger()
		var per []ModelUsage
		for _, rt := range l.Routes {
			name := rt.Provider + "/" + rt.Model
			switch {
			case rt.Provider == "" && rt.Model == "":
				name = "unknown" // a model that names no route (scripted)
			case rt.Provider == "":
				name = rt.Model
			}
			per = append(per, ModelUsage{Model: name, Usage: budgets.Ledger{Routes: []budgets.RouteTokens{rt}}.Usage(a.Catalog.Prices)})
			m := models[name]
			if m == nil {
				m = &budgets.RouteTokens{Provider: rt.Provider, Model: rt.Model}
				models[name] = m
				order = append(order, name)
			}
			m.Input += rt.Input
			m.Output += rt.Output
			m.Cached += rt.Cached
			m.CacheWrite += rt.CacheWrite
			m.Reasoning += rt.Reasoning
			m.Responses += rt.Responses
		}
		return l.Usage(a.Catalog.Prices), per
	}
	if snap, err := a.Persist.Inspect(ctx, root); err == nil {
		evs := snap.Events
		if mark > len(evs) {
			mark = len(evs)
		}
		evs = evs[mark:]
		for _, ev := range evs {
			if ev.Type == session.TypeTurnStart {
				rep.Turns++
			}
		}
		rep.Own, _ = fold(evs, 0)
		rep.Usage.Add(rep.Own)
	}
	if entries, err := a.Persist.List(ctx); err == nil {
		parent := make(map[string]string, len(entries))
		for _, e := range entries {
			parent[e.Header.ID] = e.Header.ParentSession
		}
		labels := map[string][2]string{}
		if rows, err := a.Catalog.ListDescendants(ctx, root); err == nil {
			for _, r := range rows {
				labels[r.ID] = [2]string{r.Label, string(r.Mode)}
			}
		}
		for _, e := range entries {
			if e.Header.ID == root || !below(parent, root, e.Header.ID) || e.Header.CreatedAt < createdSince {
				continue
			}
			snap, err := a.Persist.Inspect(ctx, e.Header.ID)
			if err != nil {
				rep.Children = append(rep.Children, ExecChild{SessionID: e.Header.ID, ParentID: e.Header.ParentSession, Outcome: ChildFailed, Error: "its log could not be read: " + err.Error()})
				continue
			}
			ch := ExecChild{SessionID: e.Header.ID, ParentID: e.Header.ParentSession, Label: labels[e.Header.ID][0], Mode: labels[e.Header.ID][1]}
			ch.Outcome, ch.StopReason, ch.Error = childOutcome(snap.Events)
			ch.Usage, ch.Models = fold(snap.Events, snap.Header.SeedLength)
			rep.Usage.Add(ch.Usage)
			rep.Children = append(rep.Children, ch)
		}
	}
	for _, name := range order {
		rep.Models = append(rep.Models, ModelUsage{Model: name, Usage: budgets.Ledger{Routes: []budgets.RouteTokens{*models[name]}}.Usage(a.Catalog.Prices)})
	}
	return rep
}

// below reports whether id lies below root in the parent map.
func below(parent map[string]string, root, id string) bool {
	for seen := 0; id != "" && seen <= len(parent); seen++ {
		p := parent[id]
		if p == root {
			return true
		}
		id = p
	}
	return false
}

// childOutcome reads a subagent's outcome from the end of its last turn.
func childOutcome(events []session.Event) (outcome, stop, cause string) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != session.TypeTurnEnd {
			continue
		}
		d, err := session.DecodeData[session.TurnEndData](events[i])
		if err != nil {
			return ChildFailed, "", "its last turn end could not be read: " + err.Error()
		}
		r := d.Reason
		switch r.Kind {
		case session.TurnEndCompleted:
			return ChildCompleted, r.Kind, ""
		case session.TurnEndAborted:
			return ChildCancelled, r.Kind, ""
		case session.TurnEndBudget, session.TurnEndTimeout, session.TurnEndMaxSteps:
			return ChildLimit, r.Kind, r.Detail
		default:
			msg := ""
			if r.Error != nil {
				msg = r.Error.Message
				if r.Error.Code != "" {
					msg = r.Error.Code + ": " + msg
				}
			}
			if msg == "" {
				msg = "its turn ended " + r.Kind
			}
			return ChildFailed, r.Kind, msg
		}
	}
	return ChildStopped, "", ""
}
