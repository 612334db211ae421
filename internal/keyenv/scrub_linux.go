package keyenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// scrub overwrites with zero bytes the values of the variables in kept
// within this process's initial environment block, the memory between
// env_start and env_end of /proc/self/stat that /proc/PID/environ shows.
// It writes through /proc/self/mem, which a process may do to itself.
//
// Go's own copy of the environment points into that block; Hide has
// cloned the values and unsets the variables right after, so nothing
// reads the overwritten bytes.
func scrub(kept map[string]string) error {
	start, end, err := envBounds()
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("hide the API key from /proc/%d/environ: %w", os.Getpid(), err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return fmt.Errorf("hide the API key from /proc/%d/environ: read the environment: %w", os.Getpid(), err)
	}
	var errs []error
	for off := 0; off < len(block); {
		n := bytes.IndexByte(block[off:], 0)
		if n < 0 {
			n = len(block) - off
		}
		entry := block[off : off+n]
		if name, value, ok := bytes.Cut(entry, []byte("=")); ok && len(value) > 0 {
			if _, hide := kept[string(name)]; hide {
				at := start + int64(off+len(name)+1)
				if _, err := mem.WriteAt(make([]byte, len(value)), at); err != nil {
					errs = append(errs, fmt.Errorf("hide %s from /proc/%d/environ: %w", name, os.Getpid(), err))
				}
			}
		}
		off += n + 1
	}
	return errors.Join(errs...)
}

// envBounds reads env_start and env_end (fields 50 and 51) of
// /proc/self/stat.
func envBounds() (start, end int64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("hide the API key: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("hide the API key: /proc/self/stat has no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	const first = 3 // f[0] is field 3
	if len(f) < 51-first+1 {
		return 0, 0, errors.New("hide the API key: /proc/self/stat has no environment bounds (Linux before 3.5)")
	}
	start, err1 := strconv.ParseInt(f[50-first], 10, 64)
	end, err2 := strconv.ParseInt(f[51-first], 10, 64)
	if err1 != nil || err2 != nil || start <= 0 || end <= start {
		return 0, 0, fmt.Errorf("hide the API key: environment bounds %q %q", f[50-first], f[51-first])
	}
	return start, end, nil
}
