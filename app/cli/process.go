package cli

// This file defines Process: what a command takes from the operating
// system beyond its streams and environment. Tests pass their own
// instead of replacing package variables.

import (
	"github.com/acp-agent/acp-agent/internal/keyenv"

	"io"
	"os"
	"os/signal"
	"syscall"
)

// Process is how commands subscribe to SIGINT/SIGTERM, exit at once and
// tell whether stderr is a terminal. A nil field is the real one.
type Process struct {
	// Notify subscribes c to SIGINT, SIGTERM, SIGHUP and SIGPIPE (a
	// reader of stdout that went away: exec ends the run cleanly instead
	// of dying mid-turn); Stop ends that.
	Notify func(c chan<- os.Signal)
	Stop   func(c chan<- os.Signal)
	// Exit ends the process at once (exec's second SIGINT).
	Exit func(code int)
	// StderrTerminal reports whether w, the command's stderr, is a
	// terminal (exec then shows progress on it).
	StderrTerminal func(w io.Writer) bool
	// HideKeys takes the named variables (the providers' API keys) out of
	// the process's environment and returns the getenv that still reads
	// them (package internal/keyenv). Tests that drive Main in-process
	// keep their own process's environment by setting it.
	HideKeys func(names []string, getenv func(string) string) (func(string) string, error)
}

func (p Process) hideKeys(names []string, getenv func(string) string) (func(string) string, error) {
	if p.HideKeys != nil {
		return p.HideKeys(names, getenv)
	}
	return keyenv.Hide(names, getenv)
}

func (p Process) notify(c chan<- os.Signal) {
	if p.Notify != nil {
		p.Notify(c)
		return
	}
	signal.Notify(c, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
}

func (p Process) stop(c chan<- os.Signal) {
	if p.Stop != nil {
		p.Stop(c)
		return
	}
	signal.Stop(c)
}

func (p Process) exit(code int) {
	if p.Exit != nil {
		p.Exit(code)
		return
	}
	os.Exit(code)
}

func (p Process) stderrTerminal(w io.Writer) bool {
	if p.StderrTerminal != nil {
		return p.StderrTerminal(w)
	}
	return isTerminal(w)
}
