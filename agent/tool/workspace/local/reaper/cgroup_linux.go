package reaper

// This file is the command's cgroup: where the agent's own cgroup v2
// directory is writable, the reaper creates a child cgroup for the
// command and moves itself into it before it starts the shell, so every
// process the command starts is in it whatever it does (a process cannot
// leave a cgroup it has no write access to the parent of). Killing the
// cgroup (cgroup.kill) then kills all of them, even those that escaped
// the reaper's tree (the reaper killed outright). No controller is
// enabled: the cgroup only groups.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CgroupPrefix starts the name of every command's cgroup.
const CgroupPrefix = "acp-agent-"

// own is this process's cgroup v2 directory and the v2 mount point, read
// once ("" when there is none).
var own = sync.OnceValues(func() (dir, mount string) {
	mount, root := v2Mount()
	if mount == "" {
		return "", ""
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		rel, ok := strings.CutPrefix(p, root)
		if !ok || !strings.HasPrefix(p, "/") || strings.Contains(p, " (deleted)") {
			return "", ""
		}
		return filepath.Join(mount, rel), mount
	}
	return "", ""
})

// v2Mount finds the cgroup2 mount in /proc/self/mountinfo: its mount
// point and the root of the hierarchy it shows.
func v2Mount() (mount, root string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mountpoint options... - fstype source super
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		return unescapeMount(f[4]), unescapeMount(f[3])
	}
	return "", ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// CgroupName is the name of the cgroup of the command marked marker
// ("NAME=id"), or "" when the marker has no id. A hex id of up to 64
// characters is used as it is; any other (the markers of commands run
// through ACP are "<session id>/<call id>", which a cgroup name cannot
// hold) by the first 32 hex digits of its SHA-256, so every marker the
// agent makes gets its cgroup and the sweep finds the same name again.
func CgroupName(marker string) string {
	_, id, ok := strings.Cut(marker, "=")
	if !ok || id == "" {
		return ""
	}
	hexID := len(id) <= 64
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			hexID = false
			break
		}
	}
	if !hexID {
		sum := sha256.Sum256([]byte(id))
		id = hex.EncodeToString(sum[:16])
	}
	return CgroupPrefix + id
}

// CgroupPath is where the reaper of the command marked marker creates its
// cgroup: below this process's cgroup v2 directory. "" when there is no
// cgroup v2 or the marker is not the agent's. The directory may not
// exist (not writable, no reaper).
func CgroupPath(marker string) string {
	dir, _ := own()
	name := CgroupName(marker)
	if dir == "" || name == "" {
		return ""
	}
	return filepath.Join(dir, name)
}

// ValidCgroup reports whether path (read from disk, untrusted) names a
// command's cgroup for marker: clean, below the cgroup v2 mount, named
// after marker.
func ValidCgroup(path, marker string) bool {
	_, mount := own()
	name := CgroupName(marker)
	return mount != "" && name != "" && filepath.IsAbs(path) && filepath.Clean(path) == path &&
		filepath.Base(path) == name && strings.HasPrefix(path, strings.TrimSuffix(mount, "/")+"/")
}

// enterCgroup creates the cgroup at path and moves this process into it.
// It reports whether it did; on failure nothing is left.
func enterCgroup(path string) bool {
	if path == "" {
		return false
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		return false
	}
	if writeCgroupFile(filepath.Join(path, "cgroup.procs"), strconv.Itoa(os.Getpid())) != nil {
		_ = syscall.Rmdir(path)
		return false
	}
	return true
}

// leaveCgroup moves this process back to the parent of its cgroup, then
// kills whatever is left in it and removes it.
func leaveCgroup(path string, bound time.Duration) {
	_ = writeCgroupFile(filepath.Join(filepath.Dir(path), "cgroup.procs"), strconv.Itoa(os.Getpid()))
	KillCgroup(path, bound)
}

// KillCgroup kills every process in the cgroup at path (cgroup.kill, or
// each pid in cgroup.procs until none is left where the kernel has no
// cgroup.kill, before 5.14), waits (up to bound) until it is empty, and
// removes it. It returns how many processes were in it; nothing when the
// cgroup does not exist.
func KillCgroup(path string, bound time.Duration) int {
	procs := filepath.Join(path, "cgroup.procs")
	n := len(cgroupPIDs(procs))
	if _, err := os.Lstat(procs); err != nil {
		return 0
	}
	useKill := writeCgroupFile(filepath.Join(path, "cgroup.kill"), "1") == nil
	for deadline := time.Now().Add(bound); ; time.Sleep(5 * time.Millisecond) {
		if !useKill {
			for _, pid := range cgroupPIDs(procs) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if !populated(path) || time.Now().After(deadline) {
			break
		}
	}
	// Child cgroups first (an agent run as a command makes its own):
	// a cgroup with children cannot be removed.
	var dirs []string
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != path {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
	for deadline := time.Now().Add(bound); ; time.Sleep(5 * time.Millisecond) {
		err := syscall.Rmdir(path)
		if err == nil || errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) {
			break
		}
	}
	return n
}

// populated reads "populated" in the cgroup's cgroup.events; a cgroup
// that cannot be read counts as empty.
func populated(path string) bool {
	b, err := os.ReadFile(filepath.Join(path, "cgroup.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

func cgroupPIDs(procs string) []int {
	b, err := os.ReadFile(procs)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func writeCgroupFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
