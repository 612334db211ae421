package acp

// This file encodes the read-only rules of agent/session/readonly (a
// subagent session opened for viewing, a damaged log's valid part) as
// this adapter's errors and notices.

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/session/readonly"
)

// refuseChange is the error of a request that would change read-only
// session b (readonly.Reason.Refuse).
func (b *bound) refuseChange(damagedWhat, subagentWhy string) error {
	return refusal(readonly.Reason{ID: b.id, Damage: b.damage}.Refuse(damagedWhat, subagentWhy))
}

// errDamaged refuses to change (or resume) session id, whose log is
// damaged (readonly.Damaged).
func errDamaged(id, damage, what string) error {
	return refusal(readonly.Damaged(id, damage, what))
}

func refusal(r readonly.Refusal) error { return &Error{Code: Code(r.Code), Message: r.Message} }

// damagedNotice follows a damaged session's replay (readonly.DamagedNotice).
func damagedNotice(id, damage string, child bool) string {
	return readonly.DamagedNotice(id, damage, child)
}

// validPart reads the valid part of stored session id when readErr is a
// damaged log the store can read that part of (readonly.ValidPart).
func (s *Server) validPart(ctx context.Context, id string, readErr error) (h session.Header, events []session.Event, damage string, ok bool) {
	vr, _ := s.opts.Stored.(ValidPartReader)
	return readonly.ValidPart(ctx, vr, id, readErr)
}

// damageOf is validPart's damage ("" when readErr is no readable damage).
func (s *Server) damageOf(ctx context.Context, id string, readErr error) string {
	_, _, damage, _ := s.validPart(ctx, id, readErr)
	return damage
}

// repairedNotice is the notice after the replay of a stored session whose
// log a repair left lines short of (Options.DescribeDamage words it). Nil
// for a log never repaired.
func (s *Server) repairedNotice(id string, events []session.Event) []acpsdk.SessionUpdate {
	if s.opts.DescribeDamage == nil {
		return nil
	}
	if n := readonly.NotWholeNotice(s.opts.DescribeDamage(id, events, nil)); n != "" {
		return []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText(n)}
	}
	return nil
}
