// Package reaper is the process local commands run under on Linux: this
// executable started again with argv[0] Arg, a child subreaper that kills
// and reaps every descendant of a command when it ends or the agent dies.
// Started with ServeArg it is the agent's one reaper server
// (serve_linux.go), forking each command into a cgroup of its own where
// cgroup v2 is writable; otherwise it runs one command (reaper_linux.go),
// in a cgroup of its own where it can make one (cgroup_linux.go). Its
// init serves those argvs before the rest of the binary initialises, so
// it imports the standard library and golang.org/x/sys/unix only;
// package local starts it.
package reaper
