package acp

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestBindAfterCloseRefused: once Close ran, every path that binds a
// session to the connection (a live top-level session with a registered
// agent, one without, a live child viewed read-only, and a replay of a
// session bound before Close) is refused with SHUTTING_DOWN before any
// replay is queued: no session is registered and no drain goroutine
// (which would send the replay) is started.
func TestBindAfterCloseRefused(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name string
		make func(t *testing.T, s *Server, st *session.Store, reg *agent.Registry) (id string, before *bound)
	}{
		{"live session with its agent", func(t *testing.T, s *Server, st *session.Store, reg *agent.Registry) (string, *bound) {
			sess := liveSession(t, st, session.Header{Cwd: t.TempDir()})
			ag := agent.New(sess, agent.Options{})
			t.Cleanup(func() { ag.Close(context.Background()) })
			if err := reg.Register(ag); err != nil {
				t.Fatal(err)
			}
			return sess.ID(), nil
		}},
		{"live session without an agent", func(t *testing.T, s *Server, st *session.Store, reg *agent.Registry) (string, *bound) {
			return liveSession(t, st, session.Header{Cwd: t.TempDir()}).ID(), nil
		}},
		{"live child, read-only", func(t *testing.T, s *Server, st *session.Store, reg *agent.Registry) (string, *bound) {
			parent := liveSession(t, st, session.Header{Cwd: t.TempDir()})
			return liveSession(t, st, session.Header{Cwd: t.TempDir(), ParentSession: parent.ID(), Origin: session.OriginSubagent, DelegationDepth: 1}).ID(), nil
		}},
		{"replay of a session bound before Close", func(t *testing.T, s *Server, st *session.Store, reg *agent.Registry) (string, *bound) {
			sess := liveSession(t, st, session.Header{Cwd: t.TempDir()})
			b := &bound{id: sess.ID(), sess: sess, readOnly: true}
			b.em = newEmitter(newTranslator(nil), s.sendTo(b.id), &s.emitters, s.log)
			return sess.ID(), b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := session.NewStore(session.WallSources{})
			reg := agent.NewRegistry()
			s, err := New(Options{Sessions: st, Agents: reg, Logger: slog.New(slog.DiscardHandler),
				NewAgent: func(sess *session.Session) (*agent.Agent, error) { return agent.New(sess, agent.Options{}), nil }})
			if err != nil {
				t.Fatal(err)
			}
			id, before := tt.make(t, s, st, reg)
			if err := s.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			var b *bound
			if before != nil {
				err = s.replayAgain(before)
			} else {
				b, _, err = s.loadLocked(ctx, id, "", nil, binding{}, true)
			}
			var ae *Error
			if !errors.As(err, &ae) || ae.Code != CodeShuttingDown || b != nil {
				t.Fatalf("bind after Close = %v, %v; want a %s error", b, err, CodeShuttingDown)
			}
			s.mu.Lock()
			n := len(s.sessions)
			s.mu.Unlock()
			s.emitters.mu.Lock()
			drains := s.emitters.n
			s.emitters.mu.Unlock()
			if n != 0 || drains != 0 {
				t.Errorf("after the refused bind: %d sessions bound, %d drains started; want 0 and 0", n, drains)
			}
			if _, ok := reg.Get(id); ok && tt.name == "live session without an agent" {
				t.Errorf("the refused bind left its agent registered")
			}
		})
	}
}

func liveSession(t *testing.T, st *session.Store, h session.Header) *session.Session {
	t.Helper()
	sess, err := st.Create(h, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(session.TypeTurnStart, session.TurnData{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	return sess
}

// TestCloseReturnsShutdownError: a Close whose Shutdown cannot finish in
// time (a prompt still counted) reports it, and its timed-out waits leave
// no goroutine behind (goleak checks the package at exit; here the
// tracker's waiters are counted directly).
func TestCloseReturnsShutdownError(t *testing.T) {
	s, err := New(Options{Sessions: session.NewStore(session.WallSources{}), Logger: slog.New(slog.DiscardHandler),
		NewAgent: func(sess *session.Session) (*agent.Agent, error) { return agent.New(sess, agent.Options{}), nil }})
	if err != nil {
		t.Fatal(err)
	}
	s.prompts.Add(1) // a prompt handler that never returns in time
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want Shutdown's context.Canceled", err)
	}
	s.prompts.Done()
	if err := s.prompts.Wait(t.Context()); err != nil {
		t.Errorf("Wait after Done: %v", err)
	}
}
