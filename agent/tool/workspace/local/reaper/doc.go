// Package reaper is the process each local command runs under on Linux
// (see reaper_linux.go): this executable started again with argv[0] Arg,
// a child subreaper that kills and reaps every descendant of the command
// when it ends or the agent dies. Where cgroup v2 is writable it runs the
// command in a cgroup of its own (cgroup_linux.go), killed whole at the
// end. Its init serves that argv before the rest of the binary
// initialises, so it imports the standard library and golang.org/x/sys/unix
// only; package local starts it.
package reaper
