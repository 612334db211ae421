package app

import "os"

// SetExecSignals replaces exec's signal subscription and its exit at a
// second signal for a test; the returned func restores them.
func SetExecSignals(notify, stop func(chan<- os.Signal), exit func(int)) (restore func()) {
	oldNotify, oldStop, oldExit := notifySignals, stopSignals, exitNow
	notifySignals, stopSignals, exitNow = notify, stop, exit
	return func() { notifySignals, stopSignals, exitNow = oldNotify, oldStop, oldExit }
}
