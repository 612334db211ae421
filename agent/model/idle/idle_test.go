package idle

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWatchdog(t *testing.T) {
	t.Run("fires without bytes", func(t *testing.T) {
		w := New(context.Background(), time.Millisecond)
		defer w.Stop()
		<-w.Context().Done()
		if !w.Fired() || !errors.Is(context.Cause(w.Context()), ErrIdle) {
			t.Fatalf("cause = %v, want the idle timeout", context.Cause(w.Context()))
		}
	})
	t.Run("stop is not a timeout", func(t *testing.T) {
		w := New(context.Background(), time.Hour)
		w.Kick()
		w.Stop()
		if w.Context().Err() == nil || w.Fired() {
			t.Fatalf("after Stop: err %v fired %v", w.Context().Err(), w.Fired())
		}
	})
	t.Run("the caller's cancellation is not a timeout", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		w := New(parent, 0) // disabled
		cancel()
		<-w.Context().Done()
		if w.Fired() {
			t.Fatal("a cancelled parent reported as an idle timeout")
		}
		w.Stop()
	})
}
