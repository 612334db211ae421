package app

import "os"

// SetExecSignals replaces exec's signal subscription and its exit at a
// second signal for a test; the returned func restores them.
func SetExecSignals(notify, stop func(chan<- os.Signal), exit func(int)) (restore func()) {
	oldNotify, oldStop, oldExit := notifySignals, stopSignals, exitNow
	notifySignals, stopSignals, exitNow = notify, stop, exit
	return func() { notifySignals, stopSignals, exitNow = oldNotify, oldStop, oldExit }
}

// SetStderrTerminal makes exec take its stderr for a terminal (or not)
// for a test; the returned func restores the real check.
func SetStderrTerminal(terminal bool) (restore func()) {
	old := stderrIsTerminal
	stderrIsTerminal = func(any) bool { return terminal }
	return func() { stderrIsTerminal = old }
}
