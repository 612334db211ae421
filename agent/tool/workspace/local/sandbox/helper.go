package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// exitSetup is the helper's exit status when the sandbox could not be
// applied (as a shell's "cannot execute").
const exitSetup = 126

// Main serves HelperArg: when this process was started as the helper it
// sandboxes itself and execs the command, and never returns. Otherwise it
// returns at once. Call it first thing in main and in TestMain.
func Main() {
	if len(os.Args) < 2 || os.Args[1] != HelperArg {
		return
	}
	err := runHelper(os.Args[2:])
	fmt.Fprintf(os.Stderr, "acp-agent sandbox: %v; the command was not run\n", err)
	os.Exit(exitSetup)
}

// runHelper applies the spec in args[0] to this thread and execs args[1]
// with argv args[2:]. It returns only on failure.
func runHelper(args []string) error {
	if len(args) < 3 {
		return errors.New("helper started without a command")
	}
	var sp spec
	if err := json.Unmarshal([]byte(args[0]), &sp); err != nil {
		return fmt.Errorf("bad sandbox spec: %w", err)
	}
	path, argv := args[1], args[2:]
	if lp, err := exec.LookPath(path); err == nil {
		path = lp
	}

	// Protected paths first: mounts are out of reach once Landlock
	// applies.
	if err := readOnlyBinds(sp.ReadOnly); err != nil {
		return fmt.Errorf("keep the protected paths read-only: %w", err)
	}
	if err := readOnlyFiles(sp.ReadOnlyFiles); err != nil {
		return fmt.Errorf("keep hard-linked files read-only: %w", err)
	}
	shm := []string{"/dev/pts"}
	if sp.PrivateShm {
		if err := privateShm(); err != nil {
			return fmt.Errorf("give the command a private /dev/shm: %w", err)
		}
		shm = append(shm, "/dev/shm")
	}
	cfg := landlock.V11
	if sp.Network {
		cfg.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(sp.Writable...).WithRefer().IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom").WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs(shm...).WithIoctlDev().IgnoreIfMissing(),
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("build the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("this kernel has no Landlock")
	}
	// The restriction holds for this thread and what it executes: the
	// thread must not change until exec.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("apply the Landlock ruleset: %w", err)
	}
	// Landlock cuts pathname UNIX sockets only from ABI 9: a seccomp
	// filter refuses creating any.
	if err := noUnixSockets(); err != nil {
		return fmt.Errorf("cut UNIX sockets: %w", err)
	}
	_ = unix.Close(fd)
	return fmt.Errorf("start %s: %w", path, syscall.Exec(path, argv, os.Environ()))
}
