package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// HelperArg is os.Args[1] of the re-executed helper that applies the
// sandbox and execs the command.
const HelperArg = "__acp-agent-sandbox-exec"

// CodeUnavailable is the tool error code of a command refused because the
// sandbox it must run in cannot be set up on this kernel.
const CodeUnavailable = "SANDBOX_UNAVAILABLE"

// ErrUnavailable is returned (wrapped) by Prepare and Check when the
// kernel cannot sandbox commands as the policy requires.
var ErrUnavailable = errors.New("the command sandbox is not available")

// Policy says what a sandboxed command may do besides reading files.
type Policy struct {
	// Writable lists directories where commands may write, besides their
	// cwd and the temp dir. Relative entries are taken from the cwd.
	Writable []string
	// Network allows network access.
	Network bool
	// TempDir is the temp dir commands may write in; "" means
	// os.TempDir().
	TempDir string
	// Protected are more paths kept read-only where they lie under a
	// writable directory (the agent's own settings file and data
	// directory), besides the protected names (protect.go).
	Protected []string
}

// Support is what the kernel offers.
type Support struct {
	// ABI is the Landlock ABI version; 0 means no Landlock.
	ABI int
	// NetNS reports that unprivileged user and network namespaces work.
	NetNS bool
	// MountNS reports that a mount namespace inside that user namespace
	// works and can make bind mounts read-only (protect.go).
	MountNS bool
}

// KeepsProtected reports whether sandboxed commands see the protected
// paths (.git at any depth, .acp-agent/, the editors' .vscode/, .zed/,
// .idea/, the agent's own settings and data) read-only.
func (s Support) KeepsProtected() bool { return s.MountNS }

// Sandbox prepares commands to run under a Policy. Its zero value is not
// usable: use New.
type Sandbox struct {
	policy Policy
	// exe is the executable that serves HelperArg; "" means this one.
	exe   string
	probe func() Support

	once    sync.Once
	support Support
	exeErr  error
}

// Options tune New; the zero value probes the running kernel and re-runs
// this executable.
type Options struct {
	// Executable serves HelperArg (its main calls Main); "" means
	// os.Executable().
	Executable string
	// Probe replaces the kernel probe (tests).
	Probe func() Support
}

// New returns a sandbox enforcing p.
func New(p Policy, opts Options) *Sandbox {
	probe := opts.Probe
	if probe == nil {
		probe = ProbeKernel
	}
	return &Sandbox{policy: p, exe: opts.Executable, probe: probe}
}

func (s *Sandbox) init() {
	s.once.Do(func() {
		s.support = s.probe()
		if s.exe == "" {
			s.exe, s.exeErr = os.Executable()
		}
	})
}

// Check reports whether commands can be sandboxed as the policy requires,
// with a message that says what is missing.
func (s *Sandbox) Check() error {
	s.init()
	if s.exeErr != nil {
		return fmt.Errorf("%w: cannot find the agent's own executable to start sandboxed commands: %v", ErrUnavailable, s.exeErr)
	}
	if s.support.ABI < 1 {
		return fmt.Errorf("%w: this kernel has no Landlock (it needs Linux 5.13 or later with Landlock enabled in the \"lsm=\" boot parameter); commands are refused rather than run without the sandbox", ErrUnavailable)
	}
	if !s.policy.Network && !s.support.NetNS && s.support.ABI < 4 {
		return fmt.Errorf("%w: this kernel can cut neither the network (no unprivileged user namespaces) nor TCP (Landlock ABI %d, TCP rules need 4); allow the network in the sandbox settings or run without the sandbox", ErrUnavailable, s.support.ABI)
	}
	return nil
}

// KeepsProtected reports whether commands in cwd see the protected paths
// read-only (workspace.KeepsProtected).
func (s *Sandbox) KeepsProtected(string) bool {
	s.init()
	return s.support.KeepsProtected()
}

// Describe says, for the model and the person, what a command in cwd may
// do.
func (s *Sandbox) Describe(cwd string) string {
	var b strings.Builder
	b.WriteString("sandboxed: writes only under ")
	b.WriteString(strings.Join(s.writable(cwd), ", "))
	s.init()
	if s.support.MountNS {
		b.WriteString(" (.git, .acp-agent, .vscode, .zed and .idea there read-only, and moved aside when the command creates them)")
	} else {
		b.WriteString(" (.git and the editors' task files there are writable: this kernel allows no mount namespace)")
	}
	switch {
	case s.policy.Network:
		b.WriteString("; network allowed")
	case s.support.NetNS:
		b.WriteString("; no network")
	default:
		// Landlock's TCP rules only: say what stays open.
		b.WriteString("; no TCP, but UDP and other protocols stay open (this kernel allows no network namespace)")
	}
	b.WriteString("; no UNIX sockets")
	return b.String()
}

func (s *Sandbox) writable(cwd string) []string {
	tmp := s.policy.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	out := []string{filepath.Clean(cwd), filepath.Clean(tmp)}
	for _, w := range s.policy.Writable {
		if !filepath.IsAbs(w) {
			w = filepath.Join(cwd, w)
		}
		out = append(out, filepath.Clean(w))
	}
	return out
}

// spec is what the helper is told, as its os.Args[2].
type spec struct {
	Writable []string `json:"writable"`
	Network  bool     `json:"network"`
	// ReadOnly are bind-mounted read-only before Landlock applies;
	// ReadOnlyFiles too (hard-linked files: one missing by then, moved
	// or removed meanwhile, is skipped, not an error).
	ReadOnly      []string `json:"readOnly,omitempty"`
	ReadOnlyFiles []string `json:"readOnlyFiles,omitempty"`
	// PrivateShm mounts a private tmpfs on /dev/shm; without it /dev/shm
	// is read-only for the command.
	PrivateShm bool `json:"privateShm,omitempty"`
}

// Prepare rewrites cmd (not yet started, cmd.Dir its cwd) to run under the
// sandbox: through the helper, in new user and network namespaces where
// the network is cut and the kernel allows them. It keeps cmd's
// SysProcAttr settings (process group, Pdeathsig). Where the sandbox
// keeps the protected paths, the Guard it returns finds (and moves
// aside) those the command created: call its Check once the command and
// every process it started are gone. The Guard is nil otherwise.
func (s *Sandbox) Prepare(cmd *exec.Cmd) (*Guard, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if cmd.Path == "" || cmd.Dir == "" {
		return nil, errors.New("sandbox: the command has no path or no directory")
	}
	sp := spec{Writable: s.writable(cmd.Dir), Network: s.policy.Network}
	var g *Guard
	if s.support.MountNS {
		// The guard's roots: the cwd and the configured ones, not the
		// temp dir (sp.Writable is the cwd, the temp dir, then those).
		roots := append([]string{sp.Writable[0]}, sp.Writable[2:]...)
		plant := newPlantScope(roots, sp.Writable[1])
		ro, linked, ok := walkProtected(sp.Writable, s.policy.Protected, true, plant)
		if !ok {
			return nil, fmt.Errorf("%w: more than %d entries under the writable directories: the sandbox could not find every .git to keep read-only", ErrUnavailable, maxProtectWalk)
		}
		sp.ReadOnly = ro
		// A hard link inside to a file outside: kept read-only, so the
		// command cannot write the outside file through it.
		if len(linked) > maxLinkedBinds {
			linked = linked[:maxLinkedBinds]
		}
		sp.ReadOnlyFiles = linked
		// /dev/shm is shared with every program of the user: the command
		// gets a private one (a tmpfs of its own mount namespace).
		sp.PrivateShm = true
		g = newGuard(roots, s.policy.Protected, ro, sp.Writable[1], plant.found)
	}
	data, err := json.Marshal(sp)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	args := append([]string{s.exe, HelperArg, string(data), cmd.Path}, cmd.Args...)
	cmd.Path, cmd.Args = s.exe, args
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	switch {
	case s.support.MountNS:
		userNS(cmd.SysProcAttr, !s.policy.Network, true)
	case !s.policy.Network && s.support.NetNS:
		netNS(cmd.SysProcAttr)
	}
	return g, nil
}

// userNS puts the process in a new user namespace (mapping the caller's
// own uid and gid) and, as asked, new network and mount namespaces.
func userNS(a *syscall.SysProcAttr, net, mnt bool) {
	a.Cloneflags |= syscall.CLONE_NEWUSER
	if net {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if mnt {
		a.Cloneflags |= syscall.CLONE_NEWNS
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
}

// netNS puts the process in new user and network namespaces, mapping the
// caller's own uid and gid so files keep their owners.
func netNS(a *syscall.SysProcAttr) { userNS(a, true, false) }

// ProbeKernel reads the Landlock ABI and tries a user and network
// namespace once (a short-lived /bin/true, or this executable with no
// arguments if that is missing).
func ProbeKernel() Support {
	var s Support
	if v, err := llsyscall.LandlockGetABIVersion(); err == nil {
		s.ABI = v
	}
	s.NetNS = probeNS(true, false)
	s.MountNS = probeNS(false, true)
	return s
}

func probeNS(net, mnt bool) bool {
	path, err := exec.LookPath("true")
	if err != nil {
		return false
	}
	cmd := exec.Command(path)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	userNS(cmd.SysProcAttr, net, mnt)
	return cmd.Run() == nil
}
