//go:build linux && (amd64 || arm64)

package projcache

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"unsafe"
)

// statLogAt is statLog of name in the open directory dir (path dirPath):
// fstatat relative to the directory's descriptor, so the kernel resolves
// one component per log instead of the whole path. On a directory of
// 50,000 logs a full-path stat cost 3-4 times as much per log, and more
// per log than on 10,000 (the listing's superlinear term).
func statLogAt(dir *os.File, dirPath, name string) (w witness, regular bool, err error) {
	if dir == nil {
		return statLog(dirPath + "/" + name)
	}
	var st syscall.Stat_t
	fd := int(dir.Fd())
	for {
		err = fstatat(fd, name, &st)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return witness{}, false, nil
		}
		return witness{}, false, err
	}
	w = witness{size: st.Size, mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ino: uint64(st.Ino)}
	return w, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
}

// fstatat is fstatat(2) with no flags (the syscall package does not
// export it on linux).
func fstatat(fd int, name string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(sysFstatat, uintptr(fd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
