package subagent

// This file records which agent definition a child was started from: the
// subagent/definition event, written once next to the descriptor. The
// descriptor keeps the contract's fields (route, persona, tool filter);
// this record adds the definition's name, the hash of its file and the
// limits the descriptor has no field for, so a cold resume runs the child
// as it was started even when the file changed or is gone.

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TypeDefinition is the event type of a definition record. It is written
// ignorable: a build that does not know it still reads the child.
const TypeDefinition = "subagent/definition"

// AgentDefinition is what a child records of the definition it was
// started from.
type AgentDefinition struct {
	Name string `json:"name"`
	// Hash is the definition file's hash when the child started.
	Hash string `json:"hash"`
	// File, Format and Scope say where it came from.
	File   string `json:"file"`
	Format string `json:"format"`
	Scope  string `json:"scope"`
	// Mode is "background" or "foreground", as the definition said.
	Mode string `json:"mode,omitempty"`
	// MaxTurns bounds the model requests of each of the child's turns
	// (0: the runtime's default).
	MaxTurns int `json:"maxTurns,omitempty"`
	// PermissionMode and Isolation as the definition asked.
	PermissionMode string `json:"permissionMode,omitempty"`
	Isolation      string `json:"isolation,omitempty"`
	// Skills are the skills the definition preloaded into the child's
	// prompt (their bodies are in the descriptor's persona).
	Skills []SkillRecord `json:"skills,omitempty"`
	// External is the command of an external agent (nil for an agent of
	// ours): what a cold resume starts again, whatever the file says by
	// then.
	External *ExternalCommand `json:"external,omitempty"`
}

// SkillRecord is what a child records of a skill it was started with.
type SkillRecord struct {
	Name string `json:"name"`
	File string `json:"file"`
	// Hash is the SKILL.md's hash when the child started.
	Hash string `json:"hash"`
}

// ExternalCommand is the command an external agent's child runs (as its
// definition named it when the child started). Env holds variable names,
// never values.
type ExternalCommand struct {
	Command     string   `json:"command"`
	Args        []string `json:"args,omitempty"`
	Env         []string `json:"env,omitempty"`
	LoadSession *bool    `json:"loadSession,omitempty"`
	Resume      *bool    `json:"resume,omitempty"`
}

// snapshot validates r and renders its payload.
func (r AgentDefinition) snapshot() ([]byte, error) {
	if r.Name == "" {
		return nil, errors.New("subagent definition record needs a name")
	}
	if r.MaxTurns < 0 {
		return nil, errors.New("subagent definition maxTurns must not be negative")
	}
	strs := []string{r.Name, r.Hash, r.File, r.Format, r.Scope, r.Mode, r.PermissionMode, r.Isolation}
	for _, k := range r.Skills {
		if k.Name == "" {
			return nil, errors.New("subagent definition skill record needs a name")
		}
		strs = append(strs, k.Name, k.File, k.Hash)
	}
	if e := r.External; e != nil {
		if e.Command == "" {
			return nil, errors.New("subagent definition record of an external agent needs a command")
		}
		strs = append(append(append(strs, e.Command), e.Args...), e.Env...)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return nil, ErrNotSerializable
		}
	}
	return json.Marshal(r)
}

// definitionEvent is r as a seed event at seq.
func definitionEvent(r *AgentDefinition, seq, now int64) (session.Event, error) {
	data, err := r.snapshot()
	if err != nil {
		return session.Event{}, err
	}
	return session.Event{Type: TypeDefinition, Seq: seq, Time: now, Data: data, Ignorable: true}, nil
}

// FoldDefinition returns the first definition record in events (a child's
// own events), nil when there is none. A malformed record is an error: a
// child must not resume with limits it was not started with.
func FoldDefinition(events []session.Event) (*AgentDefinition, error) {
	for _, ev := range events {
		if ev.Type != TypeDefinition {
			continue
		}
		var r AgentDefinition
		if err := json.Unmarshal(ev.Data, &r); err != nil || r.Name == "" || r.MaxTurns < 0 || (r.External != nil && r.External.Command == "") {
			return nil, fmt.Errorf("persisted subagent definition record at seq %d is malformed", ev.Seq)
		}
		return &r, nil
	}
	return nil, nil
}
