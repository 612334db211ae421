package agent

// This file runs the tool calls of a model reply: each call is recorded
// (tool/call), made durable before the tool runs (write-ahead), run
// through the registry and its result recorded (tool/result).

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// runCalls runs the tool calls of a complete reply (or records them not
// started when the reply was cut off) and says how the step ends.
func (a *Agent) runCalls(t *turnState, step int, rep *reply) stepOutcome {
	finish := rep.FinishReason()
	switch finish {
	case model.FinishLength, model.FinishContentFilter:
		// The reply was cut off: its tool calls are not run, but each
		// gets a result so the history stays well formed.
		for _, c := range rep.Calls() {
			res := tool.ErrorResult(&tool.Error{Code: tool.CodeToolNotStarted, Message: "tool call not started: the reply was cut off (finish " + finish + ")"})
			if err := a.recordCall(t, step, c, func() tool.Result { return res }); err != nil {
				return failed(t, err, callFailureCode(err))
			}
		}
		if finish == model.FinishLength {
			return stepOutcome{reason: session.TurnEndReason{Kind: session.TurnEndMaxTokens}}
		}
		return stepOutcome{reason: session.TurnEndReason{Kind: session.TurnEndBlocked}}
	}

	for _, c := range rep.Calls() {
		if err := a.recordCall(t, step, c, func() tool.Result { return a.execute(t, c) }); err != nil {
			return failed(t, err, callFailureCode(err))
		}
	}
	if t.ctx.Err() != nil {
		return stepOutcome{reason: abortedReason(t)}
	}
	if len(rep.Calls()) > 0 {
		return stepOutcome{again: true}
	}
	return stepOutcome{reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}
}

// recordCall appends tool/call, makes it durable (write-ahead: see the
// package doc), obtains the result and appends tool/result. If the
// checkpoint fails the tool is not run: the call gets a TOOL_NOT_STARTED
// result and recordCall returns a *checkpointError.
func (a *Agent) recordCall(t *turnState, step int, c *model.CallAcc, run func() tool.Result) error {
	callEv, err := a.sess.Append(session.TypeToolCall, session.ToolCallData{
		Turn: t.num, Step: step, CallID: c.ID, Name: c.Name, Arguments: c.Arguments(),
	})
	if err != nil {
		return err
	}
	// Not cancelled with the turn: a cancelled call still runs (and sees the
	// cancellation itself), as before, and its record must be durable first.
	var cpErr error
	if cpErr = a.syncTo(context.WithoutCancel(t.ctx), callEv.Seq); cpErr != nil {
		res := tool.ErrorResult(&tool.Error{Code: tool.CodeToolNotStarted, Message: "tool call not started: the session log could not be made durable"})
		run = func() tool.Result { return res }
	} else if a.opts.Journal != nil {
		if err := a.opts.Journal.Shown(t.ctx, a.sess.ID(), callEv.Seq); err != nil {
			a.log.Debug("tool call not shown before running", "call_id", c.ID, "err", err)
		}
	}
	res := run()
	content := res.Content
	if content == nil {
		content = []session.Block{}
	}
	data := session.ToolResultData{
		Turn: t.num, Step: step,
		Message: session.Message{
			ID: a.sess.NewID(), Role: session.RoleUser,
			Source: session.Source{Kind: session.SourceTool, CallID: c.ID},
			Content: []session.Block{{
				Type: session.BlockToolResult, ToolCallID: c.ID, Content: content, IsError: res.IsError,
			}},
		},
		Error:   res.Error,
		Raw:     res.Raw,
		Display: res.Display,
	}
	if data.Raw != nil {
		if _, err := json.Marshal(data.Raw); err != nil {
			a.log.Warn("tool raw output is not serializable; dropped", "tool", c.Name, "err", err)
			data.Raw = nil
		}
	}
	_, err = a.sess.Append(session.TypeToolResult, data,
		session.WithSurface(session.AppendOp), session.WithSources(callEv.Seq))
	if err == nil && cpErr != nil {
		err = &checkpointError{cpErr}
	}
	return err
}

// callFailureCode is the turn's error code when recordCall fails.
func callFailureCode(err error) string {
	var ce *checkpointError
	if errors.As(err, &ce) {
		return CodeCheckpointFailed
	}
	return CodeSessionWrite
}

// checkpointError is a failed write-ahead checkpoint before a tool call.
type checkpointError struct{ err error }

func (e *checkpointError) Error() string { return "checkpoint before tool call: " + e.err.Error() }
func (e *checkpointError) Unwrap() error { return e.err }

// execute runs one tool call through the registry, forwarding progress to
// subscribers until the call returns.
func (a *Agent) execute(t *turnState, c *model.CallAcc) tool.Result {
	var mu sync.Mutex
	done := false
	inv := tool.Invocation{
		CallID:    c.ID,
		Name:      c.Name,
		Arguments: json.RawMessage(c.Arguments()),
		Caller:    a,
		Progress: func(p tool.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				a.publishProgress(c.ID, p)
			}
		},
	}
	res := a.opts.Tools.Execute(t.ctx, inv)
	mu.Lock()
	done = true
	mu.Unlock()
	return res
}
