package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Audit architectures (linux/audit.h) of the native system call ABI.
const (
	auditArchX8664   = 0xc000003e
	auditArchAARCH64 = 0xc00000b7
	// x32 system calls on x86-64 carry this bit in their number.
	x32SyscallBit = 0x40000000
)

// seccomp_data offsets: the call number, the architecture, the low 32
// bits of the first argument (little-endian).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

// noUnixSockets installs a seccomp filter, on this thread and what it
// executes, that fails socket(AF_UNIX, ...) with EACCES: a sandboxed
// command cannot connect to the session bus, docker.sock or the ssh
// agent. A filter sees the call's registers, not the socket address a
// connect points to, so it refuses every UNIX socket (socketpair, which
// names nothing, stays allowed), also inside the writable directories.
// io_uring is refused whole (io_uring_setup, _enter and _register fail
// with EPERM, as container runtimes do): its IORING_OP_SOCKET and
// IORING_OP_CONNECT make sockets without a socket(2) the filter could
// see. Calls of another ABI (32-bit, x32) are refused outright: a filter
// for the native numbers cannot judge them. Pure Go (no libseccomp, no
// cgo).
func noUnixSockets() error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = auditArchX8664
	case "arm64":
		arch = auditArchAARCH64
	default:
		return fmt.Errorf("no seccomp filter for %s: UNIX sockets cannot be cut here", runtime.GOARCH)
	}
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	prog := []unix.SockFilter{
		/* 0 */ {Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArch},
		/* 1 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: arch, Jt: 0, Jf: 9},
		/* 2 */ {Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNr},
		/* 3 */ {Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32SyscallBit, Jt: 7, Jf: 0},
		/* 4 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_SETUP, Jt: 7, Jf: 0},
		/* 5 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_ENTER, Jt: 6, Jf: 0},
		/* 6 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_REGISTER, Jt: 5, Jf: 0},
		/* 7 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SOCKET, Jt: 0, Jf: 2},
		/* 8 */ {Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArg0},
		/* 9 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AF_UNIX, Jt: 1, Jf: 0},
		/* 10 */ {Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		/* 11 */ {Code: unix.BPF_RET | unix.BPF_K, K: deny},
		/* 12 */ {Code: unix.BPF_RET | unix.BPF_K, K: eperm},
	}
	// Jumps are relative to the next instruction: from 1, Jf 9 lands on
	// 11; from 3, Jt 7 on 11; from 4, 5 and 6 on 12; from 7, Jf 2 on 10;
	// from 9, Jt 1 on 11.
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("install the seccomp filter: %w", err)
	}
	return nil
}
