//go:build unix

package projcache

import (
	"errors"
	"io/fs"
	"syscall"
)

// statLog stats one log without opening it (a FIFO planted in the
// directory must not block a listing) and without allocating: a listing
// stats every log. A vanished log is (zero, false, nil).
func statLog(path string) (w witness, regular bool, err error) {
	var st syscall.Stat_t
	for {
		err = syscall.Stat(path, &st)
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
