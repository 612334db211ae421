package cli

import (
	"runtime/debug"
	"testing"
)

func TestPaceGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	paceGC(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC from the environment overridden: percent %d", got)
	}
	paceGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != servingGCPercent {
		t.Errorf("GC percent = %d, want %d", got, servingGCPercent)
	}
}
