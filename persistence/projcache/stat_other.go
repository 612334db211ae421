//go:build !unix

package projcache

import (
	"errors"
	"io/fs"
	"os"
)

// statLog stats one log without opening it. Without inode numbers the
// witness is size and modification time only.
func statLog(path string) (w witness, regular bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return witness{}, false, nil
		}
		return witness{}, false, err
	}
	return witness{size: st.Size(), mtime: st.ModTime().UnixNano()}, st.Mode().IsRegular(), nil
}
