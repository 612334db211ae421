package backoff

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"absent", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "120", "Retry-After": "9"}, 120 * time.Millisecond, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := RetryAfter(h, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("RetryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep on a cancelled context reported the wait elapsed")
	}
	if !Sleep(t.Context(), 0) {
		t.Error("Sleep(0) on a live context reported a cancel")
	}
}
