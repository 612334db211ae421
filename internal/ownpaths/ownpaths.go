package ownpaths

import (
	"os"
	"sync"
	"syscall"
)

type fileID struct{ dev, ino uint64 }

var (
	mu      sync.Mutex
	pending = map[string]int{}
	created = map[fileID]bool{}
)

// Begin claims path while this process creates it. Call the returned
// func once the creation is over, with whether this process created the
// file; only then is the claim kept, by the file's identity.
func Begin(path string) (end func(createdByUs bool)) {
	mu.Lock()
	pending[path]++
	mu.Unlock()
	var once sync.Once
	return func(createdByUs bool) {
		once.Do(func() {
			var id fileID
			ok := false
			if createdByUs {
				id, ok = idOf(path)
			}
			mu.Lock()
			defer mu.Unlock()
			if pending[path]--; pending[path] <= 0 {
				delete(pending, path)
			}
			if ok {
				created[id] = true
			}
		})
	}
}

// Claimed reports whether the file now at path is one this process
// created (or is creating).
func Claimed(path string) bool {
	id, ok := idOf(path)
	mu.Lock()
	defer mu.Unlock()
	if pending[path] > 0 {
		return true
	}
	return ok && created[id]
}

func idOf(path string) (fileID, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true //nolint:unconvert // Dev's type differs by platform
}
