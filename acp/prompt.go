package acp

// This file defines session/prompt: admission, the turn, and the mapping
// of how the turn ended to an ACP stop reason.

import (
	"context"
	"errors"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Prompt runs one user turn. Every session/update of the turn is on the
// wire before the response. A cancelled prompt (session/cancel, closing
// the session, shutdown) answers stopReason "cancelled" with a nil error —
// never ctx.Err(), which the SDK would send as -32800 — after closing its
// open tool calls as failed.
func (s *Server) Prompt(ctx context.Context, p acpsdk.PromptRequest) (resp acpsdk.PromptResponse, err error) {
	defer s.recoverTo("session/prompt", &err)
	ticket := s.wire.promptStarted(string(p.SessionId))
	defer s.wire.promptDone(string(p.SessionId), ticket)
	b, err := s.lookup(string(p.SessionId))
	if err != nil {
		return resp, toRequestError(err)
	}
	if b.readOnly {
		if b.damage != "" {
			return resp, toRequestError(b.refuseChange("prompted", ""))
		}
		return resp, toRequestError(errChildPrompt(b.id, s.childParent(b)))
	}
	if name, input, ok := slashCommand(p.Prompt); ok {
		return s.runCommand(ctx, b, ticket, name, input)
	}
	blocks, err := s.promptInput(ctx, b, p)
	if err != nil {
		return resp, toRequestError(err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := s.admit(b, cancel, ticket); err != nil {
		return resp, toRequestError(err)
	}
	defer s.prompts.Done()
	defer b.endPrompt()
	// What settled since the last prompt is shown first, then the
	// questions children asked meanwhile are asked again.
	b.em.startPrompt()
	h := s.questions()
	released := h.Begin(b.id)
	defer h.End(b.id)
	s.askAgain(ctx, b, released)

	msg := session.Message{
		ID:      userMessageIDOf(b, p.MessageId),
		Role:    session.RoleUser,
		Content: blocks,
		Source:  session.Source{Kind: session.SourceUser},
	}
	res, perr := b.agent.Prompt(ctx, msg)
	return s.promptResult(ctx, b, p, res, perr)
}

// promptInput checks that a prompt can run (a model with its credentials,
// a UUID messageId) and turns its content into session blocks, resource
// links expanded.
func (s *Server) promptInput(ctx context.Context, b *bound, p acpsdk.PromptRequest) ([]session.Block, error) {
	if s.opts.ModelError != nil {
		return nil, &Error{Code: CodeModelNotConfigured, Message: s.opts.ModelError.Error(), Err: s.opts.ModelError}
	}
	if err := s.authReady(b.id); err != nil {
		return nil, err
	}
	if p.MessageId != nil && !isUUID(*p.MessageId) {
		return nil, errorf(CodeInvalidParams, "messageId must be a UUID, got %q", *p.MessageId)
	}
	blocks, err := promptBlocks(p.Prompt, s.opts.MaxPromptBytes, s.imageInput(b.id))
	if err != nil {
		return nil, err
	}
	return s.expandLinks(ctx, b.id, blocks), nil
}

// askAgain waits until the questions released for this prompt are on the
// wire, then tells the model they are pending (held_questions.go).
func (s *Server) askAgain(ctx context.Context, b *bound, released []*HeldQuestion) {
	if len(released) == 0 {
		return
	}
	if err := WaitAsked(ctx, released); err != nil {
		return
	}
	if _, err := b.agent.Inject(pendingNote(released)); err != nil {
		s.log.Warn("tell the model of pending questions of children", "session_id", b.id, "err", err)
	}
}

// promptResult is the response to prompt p once its turn ended with res
// (or perr): every update flushed first; a cancelled prompt answers
// stopReason "cancelled" (or -32800 for a $/cancel_request) after its
// open tool calls are closed.
func (s *Server) promptResult(ctx context.Context, b *bound, p acpsdk.PromptRequest, res agent.TurnResult, perr error) (resp acpsdk.PromptResponse, err error) {
	cancelled := ctx.Err() != nil
	if cancelled {
		// The turn normally closes its calls itself (tool results or the
		// turn/end); this covers a turn that never started or ended.
		b.em.push(item{closeOpen: true})
	}
	if err := s.flush(context.WithoutCancel(ctx), b); err != nil {
		return resp, toRequestError(err)
	}
	if cancelled {
		s.log.Info("prompt cancelled", "session_id", b.id, "cause", context.Cause(ctx))
		if s.wire.takeRequestCancel(b.id) {
			return resp, errRequestCancelled("session/prompt")
		}
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
	if perr != nil {
		if errors.Is(perr, agent.ErrClosed) {
			return resp, toRequestError(&Error{Code: CodeShuttingDown, Message: "the session was closed during the prompt", Err: perr})
		}
		return resp, toRequestError(perr)
	}
	reason, err := stopReason(res.Reason)
	if err != nil {
		return resp, toRequestError(err)
	}
	resp = acpsdk.PromptResponse{StopReason: reason, UserMessageId: p.MessageId} // echoed: it was recorded
	if m := limitMeta(res.Reason); m != nil {
		resp.Meta = m
	}
	return resp, nil
}

// admit registers the prompt's cancel handle, refusing a second prompt on
// the same session and any prompt once shutdown began. Holding s.mu makes
// admission and Shutdown's sweep mutually exclusive, so no admitted prompt
// escapes cancellation. A session/cancel read after this prompt but handled
// before this point found nothing to cancel; the wire order (ticket) says
// so, and the prompt starts cancelled. One read later finds the handle set
// here.
func (s *Server) admit(b *bound, cancel context.CancelCauseFunc, ticket int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return errorf(CodeShuttingDown, "the agent is shutting down")
	}
	if s.sessions[b.id] != b {
		return errorf(CodeUnknownSession, "unknown session: %s (it was closed)", b.id)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		return errorf(CodePromptInFlight, "a prompt is already in flight for session %s; wait for it or send session/cancel", b.id)
	}
	b.cancel = cancel
	s.prompts.Add(1)
	if s.wire.cancelledEarly(b.id, ticket) {
		cancel(errUserCancel)
	}
	return nil
}

func (b *bound) endPrompt() {
	b.mu.Lock()
	b.cancel = nil
	b.mu.Unlock()
	b.em.endPrompt()
}

// stopReason maps how a turn ended to an ACP stop reason, or to an error
// for a failed turn.
func stopReason(r session.TurnEndReason) (acpsdk.StopReason, error) {
	switch r.Kind {
	case session.TurnEndCompleted:
		return acpsdk.StopReasonEndTurn, nil
	case session.TurnEndAborted, session.TurnEndInterrupted:
		return acpsdk.StopReasonCancelled, nil
	case session.TurnEndBlocked:
		return acpsdk.StopReasonRefusal, nil
	case session.TurnEndMaxTokens:
		return acpsdk.StopReasonMaxTokens, nil
	case session.TurnEndMaxSteps, session.TurnEndBudget, session.TurnEndTimeout:
		// ACP has no stop reason of its own for a spending or time limit:
		// the nearest, with the exact one in _meta (limitMeta).
		return acpsdk.StopReasonMaxTurnRequests, nil
	case session.TurnEndError:
		msg := "the turn failed"
		if r.Error != nil && r.Error.Message != "" {
			msg = r.Error.Message
		}
		return "", &Error{Code: CodeTurnFailed, Message: "turn failed: " + msg}
	}
	return acpsdk.StopReasonEndTurn, nil
}

// MetaLimit is the PromptResponse _meta key saying which limit ended the
// turn: {"reason": "budget" | "timeout" | "max-steps", "detail"?}.
const MetaLimit = "acp-agent/limit"

// limitMeta is the _meta of a turn a limit ended, nil otherwise.
func limitMeta(r session.TurnEndReason) map[string]any {
	switch r.Kind {
	case session.TurnEndMaxSteps, session.TurnEndBudget, session.TurnEndTimeout:
	default:
		return nil
	}
	m := map[string]any{"reason": r.Kind}
	if r.Detail != "" {
		m["detail"] = r.Detail
	}
	return map[string]any{MetaLimit: m}
}

// userMessageIDOf is the id a prompt's user message is recorded with: the
// client's own messageId (checked to be a UUID before admission), so a
// replay shows it again, else a new one of the session's.
func userMessageIDOf(b *bound, client *string) string {
	if client != nil {
		return *client
	}
	return b.sess.NewID()
}
