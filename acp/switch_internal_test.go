package acp

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
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

// TestPermissionStateGoesWithTheRoot: a root session whose 1,000
// children each asked and answered "always" holds their answers and
// labels under the root; releasing the root leaves every map of the gate
// empty (before, children's entries stayed for the connection's life).
func TestPermissionStateGoesWithTheRoot(t *testing.T) {
	ctx := context.Background()
	s := gateServer(map[string]string{"root": ModeDefault})
	st := session.NewStore(session.WallSources{})
	s.opts.Sessions = st
	s.opts.Settings = func(string) *settings.Policy { return settings.Load("", "") }
	for i := range 1000 {
		cs, err := st.Create(session.Header{Cwd: "/w"}, session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AppendRaw(session.TypeDescriptor, []byte(`{"version":2,"mode":"one-shot","provider":"spawn","label":"w"}`)); err != nil {
			t.Fatal(err)
		}
		child := cs.ID()
		s.childRecordOf("root", child)
		g := childGate(s, child, "root")
		if err := g.decide(ctx, editReq, selected(OptionAllowAlways), nil); err != nil {
			t.Fatal(err)
		}
		if err := g.Authorize(ctx, editReq); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	sizes := func() [4]int {
		s.gate.mu.Lock()
		defer s.gate.mu.Unlock()
		n := 0
		for _, m := range s.gate.always {
			n += len(m)
		}
		l := 0
		for _, m := range s.gate.children {
			l += len(m)
		}
		return [4]int{len(s.gate.always), n, l, len(s.gate.modes) + s.rootPolicies().Len()}
	}
	if got := sizes(); got[0] != 1 || got[1] != 1000 || got[2] != 1000 {
		t.Fatalf("before release: roots %d, answers %d, labels %d", got[0], got[1], got[2])
	}
	s.gate.forget("root") // what release does
	s.rootPolicies().Forget("root")
	if got := sizes(); got != [4]int{} {
		t.Errorf("after the root's release: %v, want every map empty", got)
	}
}
