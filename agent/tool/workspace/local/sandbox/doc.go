// Package sandbox runs local commands under Landlock: reads everywhere,
// writes only under the command's cwd, the system temp dir and configured
// directories, and no network.
//
// Landlock restricts the calling thread and what it executes, and Go
// offers no hook between fork and exec, so a sandboxed command is started
// as this same executable with HelperArg: Main, called first thing in
// main (and in TestMain of packages whose tests run sandboxed commands),
// applies the restriction to its own thread and execs the real command,
// which keeps the pid, the process group and Pdeathsig of the start.
//
// The network is cut by a new network namespace (entered through an
// unprivileged user namespace that maps the caller's own uid and gid)
// where the kernel allows one, and by Landlock's TCP rules where its ABI
// has them (v4+); where neither is available, or the kernel lacks
// Landlock, Prepare refuses with ErrUnavailable: a command is never run
// unsandboxed in place of a sandboxed one.
//
// Where a mount namespace can be had, the protected paths under the
// writable directories (protect.go) are bound read-only; those a command
// creates, which no bind can reach beforehand, are moved aside by its
// Guard (guard.go): at the top of the writable directories as they
// appear, deeper ones once the command is over. A new folder symlink that
// leads to a repository outside them (one made in the temp dir, say)
// counts as a protected path (planted.go): the link is moved aside.
//
// Layering: standard library, golang.org/x/sys and go-landlock only.
package sandbox
