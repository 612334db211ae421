//go:build !unix

package settings

import "sync"

var saveMu sync.Mutex

// lockFile serializes saves within this process only (no file lock on
// this platform).
func lockFile(string) (unlock func(), err error) {
	saveMu.Lock()
	return saveMu.Unlock, nil
}
