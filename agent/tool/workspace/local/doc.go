// Package local implements the workspace interfaces on this machine: Files
// over the os package, Commands as `bash -c` in its own process group, and
// simple permission gates (AllowAll, Scripted) for tests and tools-only
// use. The ACP adapter uses Files and Commands when the client does not
// advertise fs or terminal capabilities; the real permission gate is the
// adapter's (session/request_permission).
//
// Files opens inside paths through os.Root and allowed outside paths with
// O_NOFOLLOW and an identity check (CheckedFiles). Files refuses non-regular files (directories, FIFOs, devices) without
// blocking on them, refuses binary files, and caps what one read may
// load. Commands kills the whole process group on timeout or
// cancellation (SIGTERM, then SIGKILL after a short grace), also stops
// background processes the command left in its group and, on Linux, runs
// each command under a reaper (this executable again, a child subreaper)
// that kills every descendant when the command ends or the agent dies,
// with every process carrying the command's marker killed behind it: one
// reaper server for all commands where each gets a cgroup
// (serve_linux.go, owned by Running), else a reaper per command.
// AdoptOrphans makes the agent a subreaper too, reaping only the zombies
// os/exec does not wait for. Running, a durable registry of the markers
// and process groups of running commands (one flocked part per agent
// process), lets the next agent to start kill what a dead one left
// (SweepRunning) even when its reaper died with it. It keeps only the
// tail of the output, and returns only after the shell is reaped and its
// goroutines have ended.
//
// Commands with a Sandbox run under it (package sandbox: Landlock, no
// network).
//
// Layering: local imports agent/tool/workspace, agent/tool, agent/session,
// its sandbox package, golang.org/x/sys/unix and the standard library
// only; never acp, subagent, persistence or app.
package local
