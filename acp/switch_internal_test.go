package acp

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// switchServer is a Server with one bound live session whose record of a
// switch fails as fail says: "append" (the session was removed from its
// store, so Append fails) or "durable" (the checkpoint fails).
func switchServer(t *testing.T, fail string) (*Server, *bound) {
	t.Helper()
	st := session.NewStore(session.WallSources{})
	sess, err := st.Create(session.Header{Cwd: t.TempDir()}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	durable := func(context.Context, string, int64) error {
		if fail == "durable" {
			return errors.New("disk full")
		}
		return nil
	}
	s := &Server{log: slog.New(slog.DiscardHandler), ready: make(chan struct{}), sessions: map[string]*bound{},
		opts: Options{Durable: durable, Sessions: st, Models: []ModelOption{{ID: "p/small", Name: "small"}, {ID: "p/big", Name: "big"}}}}
	b := &bound{id: sess.ID(), sess: sess}
	s.sessions[b.id] = b
	if fail == "append" {
		if err := st.Remove(sess.ID()); err != nil {
			t.Fatal(err)
		}
	}
	return s, b
}

// TestFailedSwitchKeepsTheOldValue: mode and model switches are durable
// first, then in force; a switch whose record fails leaves the old value
// deciding (a failed switch to bypass does not loosen the gate).
func TestFailedSwitchKeepsTheOldValue(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []string{"append", "durable"} {
		t.Run(fail, func(t *testing.T) {
			s, b := switchServer(t, fail)
			if _, err := s.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(b.id), ModeId: ModeBypass}); err == nil {
				t.Fatal("the failed switch was answered as done")
			}
			if m := s.modeOf(b); m != ModeDefault {
				t.Errorf("mode after a failed switch = %s, want %s", m, ModeDefault)
			}
			g := &gate{s: s, requester: b.id, root: b.id, cwd: "/w", rootCwd: "/w"}
			if err := g.Authorize(ctx, execReq); codeOf(err) != workspace.CodePermissionCancelled {
				t.Errorf("a command after the failed switch: %v, want it asked", err)
			}
			if err := s.chooseModel(ctx, b, "p/big"); err == nil {
				t.Fatal("the failed model switch was answered as done")
			}
			if m := s.SessionModel(b.id); m != "p/small" {
				t.Errorf("model after a failed switch = %s, want p/small", m)
			}
		})
	}
}
