//go:build !linux

package local

// Without /proc, processes cannot be found by marker (KillMarked does
// nothing): the registry of running commands keeps nothing.

// Running keeps nothing where processes cannot be found by marker.
type Running struct{}

// OpenRunning returns an empty registry.
func OpenRunning(string) (*Running, error) { return &Running{}, nil }

// RunningEntry is the record of one running command: nothing here.
type RunningEntry struct{}

// Add records nothing.
func (*Running) Add(string) (*RunningEntry, error) { return &RunningEntry{}, nil }

// SetGroup records nothing.
func (*RunningEntry) SetGroup(int) {}

// Remove does nothing.
func (*RunningEntry) Remove() {}

// Prestart does nothing: there is no reaper server.
func (*Running) Prestart() {}

// Close does nothing.
func (*Running) Close() error { return nil }

// SweepRunning kills nothing.
func SweepRunning(string) (int, error) { return 0, nil }
