package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Gone reports whether pid has exited.
func Gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	state, _, ok := stat(strconv.Itoa(pid))
	return !ok || exited(state)
}

// GroupOf returns the process group of pid.
func GroupOf(pid int) (int, bool) {
	_, group, ok := stat(strconv.Itoa(pid))
	if !ok {
		return 0, false
	}
	pg, err := strconv.Atoi(group)
	return pg, err == nil
}

// ParentOf returns the parent of pid.
func ParentOf(pid int) (int, bool) {
	f, ok := fields(strconv.Itoa(pid))
	if !ok || len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// LiveGroupMembers lists the processes of group pgid that have not exited.
func LiveGroupMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := strconv.Itoa(pgid)
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, group, ok := stat(e.Name()); ok && group == want && !exited(state) {
			live = append(live, pid)
		}
	}
	return live, nil
}

// stat reads the state and process group of /proc/<pid>/stat.
func stat(pid string) (state, pgrp string, ok bool) {
	f, ok := fields(pid)
	if !ok || len(f) < 3 {
		return "", "", false
	}
	return f[0], f[2], true
}

// fields reads the fields of /proc/<pid>/stat after the parenthesised
// command: state ppid pgrp ...
func fields(pid string) ([]string, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil, false
	}
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), true
}

func exited(state string) bool { return state == "Z" || state == "X" }
