package acp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// TestRecordDurablyHoldsUpdatesUntilCheckpointed: while the checkpoint
// that makes a child's permission record durable runs, the record is in
// the log and the update it renders is queued behind a hold; once the
// checkpoint returned, the hold is released and the update sent. The
// emitter stays paused until then, so the queue is observed exactly.
func TestRecordDurablyHoldsUpdatesUntilCheckpointed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := session.NewStore(session.WallSources{})
	sess, err := st.Create(session.Header{Cwd: t.TempDir()}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b *bound
	var during []string // the queue while the checkpoint runs
	durable := func(context.Context, string, int64) error {
		b.em.mu.Lock()
		defer b.em.mu.Unlock()
		for _, it := range b.em.queue {
			switch {
			case it.hold != nil:
				during = append(during, "hold")
			case it.update != nil && it.update.Event != nil:
				during = append(during, it.update.Event.Type)
			default:
				during = append(during, "other")
			}
		}
		return nil
	}
	ag := agent.New(sess, agent.Options{})
	var wg sync.WaitGroup
	sent := make(chan acpsdk.SessionUpdate, 4)
	log := slog.New(slog.DiscardHandler)
	s := &Server{log: log, opts: Options{Durable: durable}}
	b = &bound{id: sess.ID(), sess: sess, agent: ag}
	b.em = newEmitter(newTranslator(nil), func(_ context.Context, u acpsdk.SessionUpdate) error {
		sent <- u
		return nil
	}, &wg, log)
	b.unsub = ag.Subscribe(func(u agent.Update) { b.em.push(item{update: &u}) })
	defer func() {
		b.unsub()
		_ = ag.Close(ctx)
		wg.Wait()
	}()

	asked := ChildPermissionData{ToolCallID: "c/call-1", ChildSessionID: "c", Depth: 1,
		Status: ChildPermissionAsked, Title: "[W] write", Kind: "edit"}
	if _, err := s.recordDurably(ctx, b, asked); err != nil {
		t.Fatal(err)
	}
	if evs := sess.MustEvents(); len(evs) != 1 || evs[0].Type != TypeChildPermission || !evs[0].Ignorable {
		t.Fatalf("log = %+v", evs)
	}
	if want := []string{"hold", TypeChildPermission}; !slices.Equal(during, want) {
		t.Fatalf("queue during the checkpoint = %v, want %v", during, want)
	}
	b.em.resume()
	select {
	case u := <-sent:
		if u.ToolCall == nil || u.ToolCall.Status != acpsdk.ToolCallStatusPending || u.ToolCall.ToolCallId != "c/call-1" {
			got, _ := json.Marshal(u)
			t.Fatalf("sent %s, want the pending tool_call", got)
		}
	case <-ctx.Done():
		t.Fatal("the update was never sent (hold not released?)")
	}
}

// TestChildPermissionRendering: each record renders the same updates live
// and on replay; unknown statuses and malformed payloads render nothing.
func TestChildPermissionRendering(t *testing.T) {
	asked := `{"toolCallId":"c/call-1","childSessionId":"c","depth":2,"status":"asked","title":"[W] Create a.txt","kind":"edit",` +
		`"display":{"locations":[{"path":"/w/a.txt","line":3}],"diffs":[{"path":"/w/a.txt","newText":"x"}],"meta":{"k":1}}}`
	tests := []struct {
		name, data, want string
	}{
		{"asked", asked, `{"_meta":{"acp-agent/subagent":{"childSessionId":"c","depth":2},"k":1},` +
			`"content":[{"newText":"x","path":"/w/a.txt","type":"diff"}],"kind":"edit","locations":[{"line":3,"path":"/w/a.txt"}],` +
			`"sessionUpdate":"tool_call","status":"pending","title":"[W] Create a.txt","toolCallId":"c/call-1"}`},
		{"allowed", `{"toolCallId":"c/call-1","childSessionId":"c","depth":2,"status":"allowed"}`,
			`{"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"c/call-1"}`},
		{"refused", `{"toolCallId":"c/call-1","childSessionId":"c","depth":2,"status":"refused"}`,
			`{"sessionUpdate":"tool_call_update","status":"failed","toolCallId":"c/call-1"}`},
		{"unknown status", `{"toolCallId":"c/call-1","status":"maybe"}`, ``},
		{"no call id", `{"status":"asked"}`, ``},
		{"malformed", `{"toolCallId":1}`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := session.Event{Seq: 0, Type: TypeChildPermission, Data: json.RawMessage(tt.data), Ignorable: true}
			for _, replay := range []bool{false, true} {
				var got string
				for _, u := range newTranslator(nil).event(ev, replay) {
					b, _ := json.Marshal(u)
					got += string(b)
				}
				if got != tt.want {
					t.Errorf("replay=%v:\n got %s\nwant %s", replay, got, tt.want)
				}
			}
		})
	}
}

// TestChildAskOnReleasedRoot: a root session released between the gate's
// lookup and the record is not written to; the caller gets ErrClosed (a
// clean rejection) and the root's emitter is not left held.
func TestChildAskOnReleasedRoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := session.NewStore(session.WallSources{})
	sess, err := st.Create(session.Header{Cwd: t.TempDir()}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ag := agent.New(sess, agent.Options{})
	var wg sync.WaitGroup
	log := slog.New(slog.DiscardHandler)
	b := &bound{id: sess.ID(), sess: sess, agent: ag}
	b.em = newEmitter(newTranslator(nil), func(context.Context, acpsdk.SessionUpdate) error { return nil }, &wg, log)
	b.em.resume()
	defer func() {
		_ = ag.Close(ctx)
		wg.Wait()
	}()
	if err := st.Remove(sess.ID()); err != nil {
		t.Fatal(err)
	}
	g := &gate{s: &Server{log: log}, requester: "child-1", root: sess.ID(), cwd: "/w",
		child: &childIdentity{id: "child-1", label: "Writer", depth: 1}}
	ask, _, err := g.recordChildAsk(ctx, b, workspace.PermissionRequest{CallID: "call-1", Tool: "write", Kind: workspace.KindEdit})
	if ask != nil || !errors.Is(err, session.ErrClosed) {
		t.Fatalf("ask = %v, err = %v; want no ask and ErrClosed", ask, err)
	}
	if g.s.asks.inFlight(sess.ID(), "child-1/call-1") {
		t.Error("the failed request is still in flight")
	}
	select {
	case <-b.em.barrier():
	case <-ctx.Done():
		t.Fatal("the emitter stayed held")
	}
}
