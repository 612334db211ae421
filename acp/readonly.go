package acp

// This file defines why a bound session is read-only (a subagent session,
// or a log damaged in the middle whose valid part is shown) and the one
// refusal each request that would change it answers.

import (
	"context"
	"errors"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// refuseChange is the error of a request that would change read-only
// session b: for a damaged log SESSION_DAMAGED, saying what is damaged and
// how to repair it; for a subagent session READ_ONLY_SESSION with why
// (subagentWhy: "it can be loaded for viewing but not prompted", ...).
// damagedWhat says what cannot be done ("prompted", "switched to another
// mode", ...).
func (b *bound) refuseChange(damagedWhat, subagentWhy string) error {
	if b.damage != "" {
		return errDamaged(b.id, b.damage, damagedWhat)
	}
	return errorf(CodeReadOnlySession, "session %s is a subagent session: %s", b.id, subagentWhy)
}

// errDamaged refuses to change (or resume) session id, whose log is
// damaged (damage, as the store words it): only its valid part can be
// viewed until it is repaired.
func errDamaged(id, damage, what string) error {
	return &Error{Code: CodeSessionDamaged, Message: fmt.Sprintf(
		"session %s cannot be %s: its log is damaged (%s), so it is open read-only; "+
			"repair it with `acp-agent sessions repair %s` (a backup is kept), then load it again", id, what, damage, id)}
}

// damagedNotice follows a damaged session's replay: what is
// damaged, that only the valid part is shown, read-only, and how to repair
// it.
func damagedNotice(id, damage string, child bool) string {
	what := "This session's"
	if child {
		what = "This subagent session's"
	}
	return fmt.Sprintf("%s log is damaged (%s), so only the part before the damage is shown, read-only. "+
		"Run `acp-agent sessions repair %s` to repair it (a backup is kept).\n\n", what, damage, id)
}

// validPart reads the valid part of stored session id when readErr, the
// failure to read its log, is a damaged log (code SESSION_CORRUPT) and
// the store can read that part (ValidPartReader); ok is false otherwise.
// damage says what is damaged, as the store words it.
func (s *Server) validPart(ctx context.Context, id string, readErr error) (h session.Header, events []session.Event, damage string, ok bool) {
	var coded interface{ ErrorCode() string }
	vr, isVR := s.opts.Stored.(ValidPartReader)
	if !isVR || !errors.As(readErr, &coded) || coded.ErrorCode() != CodeSessionCorrupt {
		return h, nil, "", false
	}
	h, events, damage, err := vr.InspectValid(ctx, id)
	if err != nil || damage == "" {
		return h, nil, "", false
	}
	return h, events, damage, true
}

// damageOf is validPart's damage ("" when readErr is no readable damage).
func (s *Server) damageOf(ctx context.Context, id string, readErr error) string {
	_, _, damage, _ := s.validPart(ctx, id, readErr)
	return damage
}

// repairedNotice is the notice after the replay of a stored session whose
// log a repair left lines short of (Options.DescribeDamage words it): its
// history is not whole. Nil for a log never repaired.
func (s *Server) repairedNotice(id string, events []session.Event) []acpsdk.SessionUpdate {
	if s.opts.DescribeDamage == nil {
		return nil
	}
	d := s.opts.DescribeDamage(id, events, nil)
	if d == "" {
		return nil
	}
	return []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText("This session's history is not whole: " + d + ".\n\n")}
}
