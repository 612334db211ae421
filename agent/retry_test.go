package agent

import (
	"fmt"
	"testing"
)

func TestDecideRetry(t *testing.T) {
	tests := []struct {
		f    failure
		used retries
		want remedy
	}{
		// A reply that stands is kept, whatever was used.
		{failNone, retries{}, remedyNone},
		{failNone, retries{compact: 1, shrink: 3, resend: 1}, remedyNone},
		// An overflow: compact once, then shrink three times, then give up.
		{failOverflow, retries{}, remedyCompact},
		{failOverflow, retries{compact: 1}, remedyShrink},
		{failOverflow, retries{compact: 1, shrink: 1}, remedyShrink},
		{failOverflow, retries{compact: 1, shrink: 2}, remedyShrink},
		{failOverflow, retries{compact: 1, shrink: 3}, remedyTooLong},
		// A broken stream is sent again once, then the failure stands.
		{failBroken, retries{}, remedyResend},
		{failBroken, retries{resend: 1}, remedyNone},
		// Each kind draws on its own budget only: a resend does not use
		// up the overflow's remedies, nor an overflow's the resend.
		{failOverflow, retries{resend: 1}, remedyCompact},
		{failOverflow, retries{compact: 1, resend: 1}, remedyShrink},
		{failOverflow, retries{compact: 1, shrink: 3, resend: 1}, remedyTooLong},
		{failBroken, retries{compact: 1}, remedyResend},
		{failBroken, retries{compact: 1, shrink: 3}, remedyResend},
		{failBroken, retries{compact: 1, shrink: 3, resend: 1}, remedyNone},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%+v", tt.f, tt.used), func(t *testing.T) {
			if got := decideRetry(tt.f, tt.used); got != tt.want {
				t.Errorf("decideRetry(%d, %+v) = %d, want %d", tt.f, tt.used, got, tt.want)
			}
		})
	}
}

// TestDecideRetryEveryState checks every failure against every count of
// used remedies up to past the budget: a remedy is picked only while its
// budget lasts, an overflow's remedy never depends on resends nor a
// broken stream's on overflow remedies, and a step's retries end.
func TestDecideRetryEveryState(t *testing.T) {
	b := retryBudget
	for _, f := range []failure{failNone, failOverflow, failBroken} {
		for c := 0; c <= b.compact+1; c++ {
			for s := 0; s <= b.shrink+1; s++ {
				for r := 0; r <= b.resend+1; r++ {
					used := retries{compact: c, shrink: s, resend: r}
					got := decideRetry(f, used)
					switch got {
					case remedyCompact:
						if f != failOverflow || c >= b.compact {
							t.Errorf("decideRetry(%d, %+v) compacts", f, used)
						}
					case remedyShrink:
						if f != failOverflow || c < b.compact || s >= b.shrink {
							t.Errorf("decideRetry(%d, %+v) shrinks", f, used)
						}
					case remedyResend:
						if f != failBroken || r >= b.resend {
							t.Errorf("decideRetry(%d, %+v) resends", f, used)
						}
					case remedyTooLong:
						if f != failOverflow || c < b.compact || s < b.shrink {
							t.Errorf("decideRetry(%d, %+v) gives up as too long", f, used)
						}
					case remedyNone:
						if f == failOverflow || (f == failBroken && r < b.resend) {
							t.Errorf("decideRetry(%d, %+v) keeps the reply", f, used)
						}
					default:
						t.Errorf("decideRetry(%d, %+v) = unknown remedy %d", f, used, got)
					}
					other := used
					if f == failOverflow {
						other.resend = (r + 1) % (b.resend + 2)
					} else {
						other.compact, other.shrink = (c+1)%(b.compact+2), (s+1)%(b.shrink+2)
					}
					if f != failNone && decideRetry(f, other) != got {
						t.Errorf("decideRetry(%d, %+v) = %d but %d with %+v: the other kind's budget leaks in", f, used, got, decideRetry(f, other), other)
					}
				}
			}
		}
	}
	// The longest run of remedies one step can take is bounded by the
	// budgets: failing the worst way every time still ends.
	var used retries
	n := 0
	for f := failOverflow; ; n++ {
		if n > b.compact+b.shrink+b.resend+2 {
			t.Fatal("retries do not end")
		}
		switch decideRetry(f, used) {
		case remedyCompact:
			used.compact++
			f = failBroken
		case remedyShrink:
			used.shrink++
			f = failBroken
		case remedyResend:
			used.resend++
			f = failOverflow
		case remedyTooLong, remedyNone:
			return
		}
	}
}
