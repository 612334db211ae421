// Package reaper is the process each local command runs under on Linux
// (see reaper_linux.go): this executable started again with argv[0] Arg,
// a child subreaper that kills and reaps every descendant of the command
// when it ends or the agent dies. Its init serves that argv before the
// rest of the binary initialises, so it imports the standard library and
// golang.org/x/sys/unix only; package local starts it.
package reaper
