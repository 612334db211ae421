package cli

// This file sets the garbage collector's pace for the serving process.

import (
	"runtime/debug"
)

// servingGCPercent is the GOGC of the serving process. A session being
// loaded holds its whole log in memory until the load's readers are done
// (then it keeps a recent tail), so while a large session loads the heap
// is mostly long-lived log bytes; at the default GOGC of 100 the heap grows
// to twice that before each collection: loading a 100 MB log (about 110 MB
// of live heap) peaked at 2.9 times its size resident, at 50 at 2.05 times,
// at 40 at 1.9 to 2.1 times, for about 2% more CPU; since the load drops
// the log before its replay streams from the file, 1.7 times
// (BenchmarkLoadLargeSession in cmd/acp-agent). A GOGC set in the
// environment wins.
const servingGCPercent = 40

// paceGC applies servingGCPercent unless GOGC is set.
func paceGC(getenv func(string) string) {
	if getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(servingGCPercent)
}
