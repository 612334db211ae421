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
	created = map[fileID]*os.File{}
	// paths is where each kept claim was made (ReleaseRemoved).
	paths = map[fileID]string{}
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
			var held *os.File
			if createdByUs {
				// The handle pins the inode; its identity is the claim's.
				if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0); err == nil {
					if fi, err := f.Stat(); err == nil {
						if st, ok := fi.Sys().(*syscall.Stat_t); ok {
							id, held = fileID{uint64(st.Dev), uint64(st.Ino)}, f //nolint:unconvert // Dev's type differs by platform
						}
					}
					if held == nil {
						f.Close()
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if pending[path]--; pending[path] <= 0 {
				delete(pending, path)
			}
			if held != nil {
				if old := created[id]; old != nil {
					old.Close()
				}
				created[id] = held
				paths[id] = path
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
	return ok && created[id] != nil
}

// Release drops the claim on the file now at path (its creator removes
// it, or is done with it) and closes the claim's handle. A path that is
// gone or not claimed is a no-op.
func Release(path string) {
	id, ok := idOf(path)
	if !ok {
		return
	}
	mu.Lock()
	f := created[id]
	delete(created, id)
	delete(paths, id)
	mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// ReleaseRemoved drops the claims made at path whose file is no longer
// there (its creator just removed it).
func ReleaseRemoved(path string) {
	now, there := idOf(path)
	var drop []*os.File
	mu.Lock()
	for id, p := range paths {
		if p == path && (!there || id != now) {
			drop = append(drop, created[id])
			delete(created, id)
			delete(paths, id)
		}
	}
	mu.Unlock()
	for _, f := range drop {
		f.Close()
	}
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
