//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// readOnlyBinds makes each path read-only for this process and what it
// executes: inside the command's own mount namespace (it runs in a new
// user namespace, which may create one), mounts are made private, then
// each path is bind-mounted on itself and remounted read-only, keeping
// the flags the kernel locks (nosuid, nodev, noexec of the mount it lies
// on). Any failure is returned: the command is then not run.
func readOnlyBinds(paths []string) error {
	return binds(paths, false)
}

// readOnlyFiles is readOnlyBinds for files that may be gone by now.
func readOnlyFiles(paths []string) error {
	return binds(paths, true)
}

// privateShm mounts a tmpfs of this mount namespace on /dev/shm: what the
// command writes there is its own, and it sees nobody else's.
func privateShm() error {
	if err := makePrivate(); err != nil {
		return err
	}
	if _, err := os.Stat("/dev/shm"); err != nil {
		return nil // nothing to cover
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=256m"); err != nil {
		return fmt.Errorf("mount a tmpfs on /dev/shm: %w", err)
	}
	return nil
}

var privateDone bool

// makePrivate makes every mount of this namespace private, once, so what
// the helper mounts does not propagate out.
func makePrivate() error {
	if privateDone {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	privateDone = true
	return nil
}

func binds(paths []string, missingOK bool) error {
	if len(paths) == 0 {
		return nil
	}
	if err := makePrivate(); err != nil {
		return err
	}
	for _, p := range paths {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			if missingOK && errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("bind %s: %w", p, err)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", p, err)
		}
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		for _, f := range [][2]int64{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
			{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
			{unix.ST_RELATIME, unix.MS_RELATIME}} {
			if int64(st.Flags)&f[0] != 0 {
				flags |= uintptr(f[1])
			}
		}
		if err := unix.Mount("", p, "", flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}
