package subagent

// This file defines the control tools of a parent (`send_message`,
// `interrupt_agent`, subagent-contract.md §4.2–4.3) and the child-side
// `report` tool (§2.6).

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

const (
	sendMessageParameters  = `{"type":"object","properties":{"subagent_id":{"type":"string","description":"The subagent id returned when the background subagent was started."},"message":{"type":"string","description":"The message to deliver to the subagent."}},"required":["subagent_id","message"]}`
	sendMessageDescription = "Send a message to one of your background subagents, by the subagent id you got when you started it, " +
		"continuing its conversation. The message becomes the subagent's next turn: if it is still busy, the message waits " +
		"for its current turn to end, so it cannot change work already in progress. You get no answer from the subagent " +
		"here, only confirmation that the message was delivered; use it to hand the subagent more work. An error means " +
		"the message was NOT delivered."

	interruptParameters  = `{"type":"object","properties":{"agent_id":{"type":"string","description":"The agent id of the running agent to interrupt."}},"required":["agent_id"]}`
	interruptDescription = "Ask a background agent to stop its current turn, by its agent id. The target can be your direct " +
		"child or any agent started below you. Only the current turn stops: messages already queued for it stay parked " +
		"until a later send_message, agents it started keep running, and it remains available for follow-ups. The call " +
		"returns as soon as the request is accepted, so the target may run on briefly; interrupting an agent that " +
		"already finished is accepted and does nothing."

	reportParameters  = `{"type":"object","properties":{"output":{"type":"string","description":"What to tell the agent that started you."}},"required":["output"]}`
	reportDescription = "Send an interim report to the agent that started you without ending your work. It reaches that " +
		"agent at its next step. Your final answer is delivered automatically when you finish, so use this only for " +
		"progress or findings that should not wait."
)

// SendMessage is the `send_message` tool.
type SendMessage struct{ svc *Service }

// Interrupt is the `interrupt_agent` tool.
type Interrupt struct{ svc *Service }

// ReportTool is the child-side `report` tool.
type ReportTool struct{ svc *Service }

var (
	_ tool.Tool = (*SendMessage)(nil)
	_ tool.Tool = (*Interrupt)(nil)
	_ tool.Tool = (*ReportTool)(nil)
)

// NewSendMessageTool returns `send_message` over rt.
func NewSendMessageTool(rt *Runtime) *SendMessage { return &SendMessage{rt.Service} }

// NewInterruptTool returns `interrupt_agent` over rt.
func NewInterruptTool(rt *Runtime) *Interrupt { return &Interrupt{rt.Service} }

// NewReportTool returns the child-side `report` tool over rt.
func NewReportTool(rt *Runtime) *ReportTool { return &ReportTool{rt.Service} }

// Spec returns the tool's name, description and parameter schema.
func (t *SendMessage) Spec() model.ToolSpec {
	return model.ToolSpec{Name: SendMessageToolName, Description: sendMessageDescription, Parameters: json.RawMessage(sendMessageParameters)}
}

// Kind is "other".
func (t *SendMessage) Kind() string { return "other" }

// Execute delivers the message as the child's next turn.
func (t *SendMessage) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	caller, ok := inv.Caller.(*agent.Agent)
	if !ok || caller == nil {
		return tool.Result{}, errors.New("send_message requires a calling agent (exec.agent was undefined)")
	}
	var args struct {
		SubagentID string `json:"subagent_id"`
		Message    string `json:"message"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "invalid arguments: " + err.Error()}
	}
	// The child's work from this message on shows as this call's digest,
	// as a start's does on its delegation's (digest.go): whether this
	// message resumes it from disk or finds it resident (the earlier
	// call's digest then closes, saying this one goes on).
	depth := caller.Session().Header().DelegationDepth + 1
	rep := newDigestReporter(t.svc.digest, false, childLinkMeta(args.SubagentID, ModeContinuable, depth), inv.Progress)
	id, watched, err := t.svc.FollowupWatched(ctx, caller, args.SubagentID, []session.Block{session.Text(args.Message)}, &Watch{
		OnUpdate: rep.observe,
		OnSettled: func(stop string, wt *WorktreeOutcome) string {
			text := rep.finish(stop, wt)
			rep.sendFinal(text, stop)
			return text
		},
		OnReplaced: rep.handover,
	})
	if err != nil {
		rep.stop()
		return tool.Result{}, err
	}
	callID := inv.CallID
	rep.setReport(func(p tool.Progress) { caller.ReportProgress(callID, p) })
	res := tool.TextResult("message queued as the next turn for subagent "+args.SubagentID, map[string]any{"messageId": id})
	if watched {
		// The link makes this call the one the settlement notice's
		// digest closes.
		res.Display = childDisplay(args.SubagentID, ModeContinuable, depth)
	} else {
		rep.stop()
	}
	return res, nil
}

// Spec returns the tool's name, description and parameter schema.
func (t *Interrupt) Spec() model.ToolSpec {
	return model.ToolSpec{Name: InterruptToolName, Description: interruptDescription, Parameters: json.RawMessage(interruptParameters)}
}

// Kind is "other".
func (t *Interrupt) Kind() string { return "other" }

// Execute requests the interrupt with the caller's ancestor authority.
func (t *Interrupt) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	caller, ok := inv.Caller.(*agent.Agent)
	if !ok || caller == nil {
		return tool.Result{}, errors.New("interrupt_agent requires a calling agent (exec.agent was undefined)")
	}
	var args struct {
		AgentID string `json:"agent_id"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "invalid arguments: " + err.Error()}
	}
	if err := t.svc.Interrupt(args.AgentID, AncestorAuthority(caller)); err != nil {
		return tool.Result{}, err
	}
	return tool.TextResult("interrupt requested for agent "+args.AgentID, map[string]any{"accepted": true}), nil
}

// Spec returns the tool's name, description and parameter schema.
func (t *ReportTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: ReportToolName, Description: reportDescription, Parameters: json.RawMessage(reportParameters)}
}

// Kind is "other".
func (t *ReportTool) Kind() string { return "other" }

// Execute delivers the report to the caller's live direct parent.
func (t *ReportTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	caller, ok := inv.Caller.(*agent.Agent)
	if !ok || caller == nil {
		return tool.Result{}, errors.New("report requires a calling agent (exec.agent was undefined)")
	}
	var args struct {
		Output string `json:"output"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "invalid arguments: " + err.Error()}
	}
	id, err := t.svc.Report(ctx, caller, []session.Block{session.Text(args.Output)}, DeliveryNextStep)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.TextResult("report accepted by the agent that started you as message "+id, map[string]any{"messageId": id}), nil
}

// ParentTools returns the delegation and control tools a parent at depth
// gets: `subagent`, `subagent_fork`, `send_message`, `interrupt_agent`
// (delegation tools only while depth < maxDepth).
func ParentTools(rt *Runtime, depth, maxDepth int) []tool.Tool {
	out := []tool.Tool{NewSendMessageTool(rt), NewInterruptTool(rt)}
	if depth < maxDepth {
		out = append(out, NewSubagentTool(rt), NewForkTool(rt))
	}
	return out
}
