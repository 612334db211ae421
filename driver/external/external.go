package external

// This file defines the vocabulary of the package: the command a child
// runs, the options a Child is built with, the log records, and the
// error every failure of the external agent is reported with.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
)

// Log records of an external child (ignorable: a build that does not know
// them still reads the child).
const (
	// TypeExternal records the external session the child drives: its id
	// and what the agent announced (written after session/new).
	TypeExternal = "subagent/external"
	// TypeNestedChild records a child the external agent announced with
	// subagent_update (one event per announcement).
	TypeNestedChild = "subagent/external-child"
)

// CodeExternalFailed is the error code of a turn the external agent
// failed: it crashed, hung, wrote something that is not JSON-RPC, refused
// initialize, or cannot be resumed.
const CodeExternalFailed = "EXTERNAL_AGENT_FAILED"

// Defaults of Options.
const (
	DefaultInitTimeout  = 30 * time.Second
	DefaultReplyTimeout = 10 * time.Minute
	DefaultCancelGrace  = 5 * time.Second
)

// Command is what an external child runs.
type Command struct {
	// Name is the agent definition's name (shown in questions and errors).
	Name    string
	Command string
	Args    []string
	// Env names the variables passed from the agent's environment.
	Env []string
	// LoadSession and Resume: nil uses the method when the agent
	// advertises it; false never does.
	LoadSession, Resume *bool
}

// Line is the command line as the person is shown it.
func (c Command) Line() string {
	return (&agentdef.External{Command: c.Command, Args: c.Args}).CommandLine()
}

// Options configure the Child of one external child.
type Options struct {
	// Workspace resolves the child's workspace: its cwd (the external
	// session's), files, commands and permission gate.
	Workspace workspace.Resolver
	// Approve, when set, is asked before the command starts (each start:
	// the first turn and every cold resume); an error refuses the start
	// and ends the turn with it.
	Approve func(ctx context.Context, sessionID string, cmd Command) error
	// Running records the process like a local command's, so the next
	// agent kills it if this one dies; nil records nothing.
	Running *local.Running
	// Getenv reads the agent's environment (default: none).
	Getenv func(string) string
	// InitTimeout bounds initialize and the session setup; ReplyTimeout is
	// how long the agent may stay silent while a request of ours is
	// outstanding and none of its requests is being served (a hang);
	// CancelGrace how long it may take to stop after session/cancel
	// before it is killed; KillGrace the time between SIGTERM and
	// SIGKILL. Zero takes the defaults.
	InitTimeout, ReplyTimeout, CancelGrace, KillGrace time.Duration
	// OnNested, when set, is told each child the agent announced.
	OnNested func(sessionID string, n Nested)
	// ClientVersion is sent as clientInfo.version.
	ClientVersion string
	Logger        *slog.Logger
}

func (o *Options) defaults() {
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.ReplyTimeout <= 0 {
		o.ReplyTimeout = DefaultReplyTimeout
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = DefaultCancelGrace
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Record is the payload of a TypeExternal event.
type Record struct {
	// SessionID is the external agent's session.
	SessionID string   `json:"sessionId"`
	Command   string   `json:"command"`
	Args      []string `json:"args,omitempty"`
	// Agent is what it said it is (agentInfo).
	AgentName    string `json:"agentName,omitempty"`
	AgentVersion string `json:"agentVersion,omitempty"`
	// The capabilities it announced that matter to a cold resume.
	LoadSession bool `json:"loadSession"`
	Resume      bool `json:"resume"`
}

// Nested is a child the external agent announced (subagent_update).
type Nested struct {
	SessionID   string `json:"sessionId"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// State is running, idle, requires_action or unknown ("" when the
	// update did not say); StopReason the idle state's.
	State      string `json:"state,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}

// LastRecord returns the last TypeExternal record in events (nil: none).
func LastRecord(events []session.Event) (*Record, error) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeExternal {
			continue
		}
		var r Record
		if err := json.Unmarshal(events[i].Data, &r); err != nil || r.SessionID == "" {
			return nil, fmt.Errorf("the external session record at seq %d is malformed", events[i].Seq)
		}
		return &r, nil
	}
	return nil, nil
}

// NestedChildren folds the TypeNestedChild events of events: each
// announced child once, in announcement order, with its latest state.
func NestedChildren(events []session.Event) []Nested {
	var out []Nested
	at := map[string]int{}
	for _, ev := range events {
		if ev.Type != TypeNestedChild {
			continue
		}
		var n Nested
		if json.Unmarshal(ev.Data, &n) != nil || n.SessionID == "" {
			continue
		}
		if i, ok := at[n.SessionID]; ok {
			prev := out[i]
			if n.Title == "" {
				n.Title = prev.Title
			}
			if n.Description == "" {
				n.Description = prev.Description
			}
			out[i] = n
			continue
		}
		at[n.SessionID] = len(out)
		out = append(out, n)
	}
	return out
}

// Error is a failure of the external agent. The agent loop records its
// Code on the turn's end, so the child settles failed with Message as the
// cause.
type Error struct {
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Code is CodeExternalFailed.
func (e *Error) Code() string { return CodeExternalFailed }

func failf(err error, format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...), Err: err}
}

// IsExternalFailure reports whether err is an external agent's failure.
func IsExternalFailure(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
