package acp

import (
	"context"
	"errors"
	"testing"
	"time"
)

// holdAsync holds q in a goroutine and returns where its result goes.
func holdAsync(ctx context.Context, h *HeldQuestions, q *HeldQuestion) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Hold(ctx, q) }()
	return done
}

func waitHeld(t *testing.T, h *HeldQuestions, root string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.Held(root) != n {
		if time.Now().After(deadline) {
			t.Fatalf("held %d, want %d", h.Held(root), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHeldQuestions: a question is held while no prompt of its root runs
// and released, in order, by the next prompt; asked at once during one;
// dropped with its root; withdrawn with its context; refused at its
// deadline; and the listing state follows it.
func TestHeldQuestions(t *testing.T) {
	ctx := context.Background()
	t.Run("released in order by the next prompt", func(t *testing.T) {
		h := NewHeldQuestions(-1, nil)
		a, b := &HeldQuestion{Root: "r", Child: "a", Title: "A"}, &HeldQuestion{Root: "r", Child: "b", Title: "B"}
		da := holdAsync(ctx, h, a)
		waitHeld(t, h, "r", 1)
		db := holdAsync(ctx, h, b)
		waitHeld(t, h, "r", 2)
		if st, ok := h.State("a"); !ok || st.State != QuestionHeld || st.Title != "A" {
			t.Errorf("state of a = %+v, %v", st, ok)
		}
		if qs := h.Begin("other"); len(qs) != 0 {
			t.Errorf("another root's prompt released %d", len(qs))
		}
		qs := h.Begin("r")
		if len(qs) != 2 || qs[0] != a || qs[1] != b {
			t.Fatalf("released %v", qs)
		}
		if err := <-da; err != nil {
			t.Fatal(err)
		}
		if err := <-db; err != nil {
			t.Fatal(err)
		}
		if _, ok := h.State("a"); ok {
			t.Error("a released question still listed as held")
		}
		// During the prompt a question goes at once.
		c := &HeldQuestion{Root: "r", Child: "c"}
		if err := h.Hold(ctx, c); err != nil || h.Held("r") != 0 {
			t.Errorf("during a prompt: %v, held %d", err, h.Held("r"))
		}
		a.Asked()
		b.Asked()
		c.Asked()
		if err := WaitAsked(ctx, qs); err != nil {
			t.Fatal(err)
		}
		h.End("r")
		d := holdAsync(ctx, h, &HeldQuestion{Root: "r", Child: "d"})
		waitHeld(t, h, "r", 1)
		h.Drop("r")
		if err := <-d; !errors.Is(err, ErrQuestionDropped) {
			t.Errorf("dropped: %v", err)
		}
	})
	t.Run("withdrawn with its context", func(t *testing.T) {
		h := NewHeldQuestions(-1, nil)
		cctx, cancel := context.WithCancel(ctx)
		q := &HeldQuestion{Root: "r", Child: "a"}
		done := holdAsync(cctx, h, q)
		waitHeld(t, h, "r", 1)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
		if h.Held("r") != 0 {
			t.Error("a withdrawn question stays held")
		}
		if err := WaitAsked(ctx, []*HeldQuestion{q}); err != nil {
			t.Error("a withdrawn question blocks the prompt waiting for it")
		}
	})
	t.Run("refused at the deadline", func(t *testing.T) {
		fire := make(chan time.Time)
		var asked time.Duration
		h := NewHeldQuestions(0, func(d time.Duration) <-chan time.Time { asked = d; return fire })
		dctx, stop := h.Deadline(ctx)
		defer stop()
		if asked != DefaultQuestionTimeout {
			t.Errorf("deadline %s, want %s", asked, DefaultQuestionTimeout)
		}
		q := &HeldQuestion{Root: "r", Child: "a", Title: "A"}
		done := holdAsync(dctx, h, q)
		waitHeld(t, h, "r", 1)
		close(fire)
		<-done
		if !Expired(dctx) {
			t.Fatal("not expired")
		}
		h.Refused(q, "why")
		if st, ok := h.State("a"); !ok || st.State != QuestionRefused || st.Reason != "why" {
			t.Errorf("state = %+v", st)
		}
	})
	t.Run("no deadline", func(t *testing.T) {
		h := NewHeldQuestions(-1, func(time.Duration) <-chan time.Time { t.Error("a clock was asked for"); return nil })
		dctx, stop := h.Deadline(ctx)
		stop()
		if dctx != ctx {
			t.Error("a context without a deadline was replaced")
		}
	})
}
