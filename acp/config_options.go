package acp

// This file defines the session's config options: session/new and
// session/load answer with configOptions holding the model picker (a select
// of category "model", only when more than one model is configured in
// Options.Models) and the session mode (a select of category "mode", always
// for a top-level session: some clients, CodeCompanion among them, read only
// configOptions and never the modes field). session/set_config_option
// switches either. A model choice is recorded in the session log as an
// ignorable "session/model" event (so it survives session/load and a
// restart) and announced as config_option_update, live and on replay; a mode
// choice through either method is the same session/mode event as
// session/set_mode (modes.go), announced both as current_mode_update and as
// config_option_update, so the two places always show the same mode.

import (
	"context"
	"fmt"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// ModelOption is a model a session can use: Options.Models lists them, the
// first being the default.
type ModelOption struct {
	// ID is the value of the model option (its route, PROVIDER/MODEL).
	ID string
	// Name is what editors show; Description is optional.
	Name        string
	Description string
}

// ConfigModel is the id of the model config option; ConfigMode that of the
// mode config option.
const (
	ConfigModel = "model"
	ConfigMode  = "mode"
)

// TypeSessionModel is the log event recording a model choice. It is
// appended ignorable, so builds that do not know it still read the log;
// the last one naming a configured model is the session's model.
const TypeSessionModel = "session/model"

// SessionModelData is the payload of a session/model event.
type SessionModelData struct {
	ModelID string `json:"modelId"`
}

// modelState caches each top-level session's model choice (read from its
// log the first time).
type modelState struct {
	mu     sync.Mutex
	models map[string]string
	// thinking caches the thinking choices, true for on
	// (config_thinking.go).
	thinking map[string]bool
}

// offersModels reports whether the model picker is offered.
func (s *Server) offersModels() bool { return len(s.opts.Models) > 1 }

// modelList is the configured models, the first being the default.
type modelList []ModelOption

func (l modelList) known(id string) bool {
	for _, m := range l {
		if m.ID == id {
			return true
		}
	}
	return false
}

func (s *Server) knownModel(id string) bool { return modelList(s.opts.Models).known(id) }

// SessionModel returns the id of the model top-level session id uses now:
// its last recorded choice, else the default (the first of Options.Models).
// It returns "" when no model picker is offered. The agent asks it before
// each model request, so a switch applies from the next request.
func (s *Server) SessionModel(id string) string {
	if !s.offersModels() {
		return ""
	}
	s.modelChoice.mu.Lock()
	defer s.modelChoice.mu.Unlock()
	if m, ok := s.modelChoice.models[id]; ok {
		return m
	}
	m := s.opts.Models[0].ID
	if sess, ok := s.opts.Sessions.Get(id); ok {
		events, err := sess.Events()
		if err != nil {
			// Not cached: the next request reads the log again.
			s.log.Warn("read the session's model choice from the log", "session_id", id, "err", err)
			return m
		}
		m = s.modelFromLog(events)
	}
	if s.modelChoice.models == nil {
		s.modelChoice.models = map[string]string{}
	}
	s.modelChoice.models[id] = m
	return m
}

// forgetModel drops the cached choice of a released session.
func (s *Server) forgetModel(id string) {
	s.modelChoice.mu.Lock()
	defer s.modelChoice.mu.Unlock()
	delete(s.modelChoice.models, id)
	delete(s.modelChoice.thinking, id)
}

// modelFromLog returns the last recorded model still configured, or the
// default.
func (s *Server) modelFromLog(events []session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeSessionModel {
			continue
		}
		d, err := session.DecodeData[SessionModelData](events[i])
		if err == nil && s.knownModel(d.ModelID) {
			return d.ModelID
		}
	}
	return s.opts.Models[0].ID
}

// configOptionsFor renders the full configOptions of a top-level session
// whose model is model ("" without a picker) and whose mode is mode.
func (s *Server) configOptionsFor(model, mode string) []acpsdk.SessionConfigOption {
	return sessionConfig(s.opts.Models, model, true, mode, nil, nil)
}

// sessionConfig renders configOptions: the model picker when more than one
// model is configured (model "" is the default), then, with withMode, the
// mode option (mode "" is ModeDefault).
func sessionConfig(l modelList, model string, withMode bool, mode string, sandbox, thinking *bool) []acpsdk.SessionConfigOption {
	var out []acpsdk.SessionConfigOption
	if len(l) > 1 {
		if model == "" {
			model = l[0].ID
		}
		out = append(out, l.configOption(model))
	}
	if withMode {
		if mode == "" {
			mode = ModeDefault
		}
		out = append(out, modeConfigOption(mode))
	}
	if sandbox != nil {
		out = append(out, sandboxOption(*sandbox))
	}
	if thinking != nil {
		out = append(out, thinkingOption(*thinking))
	}
	return out
}

func (l modelList) configOption(current string) acpsdk.SessionConfigOption {
	opts := make(acpsdk.SessionConfigSelectOptionsUngrouped, len(l))
	for i, m := range l {
		opts[i] = acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.ID), Name: m.Name}
		if m.Description != "" {
			opts[i].Description = acpsdk.Ptr(m.Description)
		}
	}
	category := acpsdk.SessionConfigOptionCategoryModel
	return acpsdk.SessionConfigOption{Select: &acpsdk.SessionConfigOptionSelect{
		Id:           ConfigModel,
		Name:         "Model",
		Description:  acpsdk.Ptr("The model answering this session's next requests"),
		Category:     &category,
		CurrentValue: acpsdk.SessionConfigValueId(current),
		Options:      acpsdk.SessionConfigSelectOptions{Ungrouped: &opts},
	}}
}

// modeConfigOption is the session mode as a config option: the same modes,
// names and descriptions as availableModes.
func modeConfigOption(current string) acpsdk.SessionConfigOption {
	opts := make(acpsdk.SessionConfigSelectOptionsUngrouped, len(availableModes))
	for i, m := range availableModes {
		opts[i] = acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description}
	}
	category := acpsdk.SessionConfigOptionCategoryMode
	return acpsdk.SessionConfigOption{Select: &acpsdk.SessionConfigOptionSelect{
		Id:           ConfigMode,
		Name:         "Mode",
		Description:  acpsdk.Ptr("What the agent may do without asking"),
		Category:     &category,
		CurrentValue: acpsdk.SessionConfigValueId(current),
		Options:      acpsdk.SessionConfigSelectOptions{Ungrouped: &opts},
	}}
}

// configOptions is the configOptions field of a session/new or
// session/load answer: nil for a read-only (subagent) session, whose model
// and mode are fixed.
func (s *Server) configOptions(b *bound) []acpsdk.SessionConfigOption {
	if b.readOnly {
		return nil
	}
	return s.configOptionsOf(b)
}

// configOptionsOf is the full configOptions of bound session b.
func (s *Server) configOptionsOf(b *bound) []acpsdk.SessionConfigOption {
	var sandbox *bool
	if s.offersSandboxOption() && b.sess != nil && b.sess.Header().Origin != session.OriginSubagent {
		on := s.sandboxOn(b)
		sandbox = &on
	}
	return sessionConfig(s.opts.Models, s.SessionModel(b.id), true, s.modeOf(b), sandbox, s.thinkingValue(b))
}

// setConfigOption switches a session's model or mode. The choice is
// recorded in the session log (durable before the answer) and announced as
// config_option_update (and a mode also as current_mode_update); the answer
// carries the full configOptions. A running turn keeps going: a model
// applies from its next model request, a mode from its next permission
// decision.
func (s *Server) setConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (resp acpsdk.SetSessionConfigOptionResponse, err error) {
	var sid, configID, value string
	switch {
	case p.ValueId != nil:
		sid, configID, value = string(p.ValueId.SessionId), string(p.ValueId.ConfigId), string(p.ValueId.Value)
	case p.Boolean != nil && string(p.Boolean.ConfigId) == ConfigSandbox && s.offersSandboxOption():
		b, err := s.lookup(string(p.Boolean.SessionId))
		if err != nil {
			return resp, toRequestError(err)
		}
		if b.readOnly {
			return resp, toRequestError(b.refuseChange("given another sandbox", "its commands follow its root session"))
		}
		if err := s.setSandbox(ctx, b, p.Boolean.Value); err != nil {
			return resp, err
		}
		resp.ConfigOptions = s.configOptionsOf(b)
		return resp, nil
	case p.Boolean != nil && string(p.Boolean.ConfigId) == ConfigThinking:
		b, err := s.lookup(string(p.Boolean.SessionId))
		if err != nil {
			return resp, toRequestError(err)
		}
		if b.readOnly {
			return resp, toRequestError(b.refuseChange("given another thinking setting", "its model is fixed when it is delegated"))
		}
		if !s.offersThinkingOption(b) {
			return resp, toRequestError(errorf(CodeInvalidParams,
				"config option %q is not offered for this session (available: %s)", p.Boolean.ConfigId, s.configIDs()))
		}
		if err := s.setThinking(ctx, b, p.Boolean.Value); err != nil {
			return resp, err
		}
		resp.ConfigOptions = s.configOptionsOf(b)
		return resp, nil
	case p.Boolean != nil:
		return resp, toRequestError(errorf(CodeInvalidParams,
			"config option %q is not a boolean option (available: %s)", p.Boolean.ConfigId, s.configIDs()))
	default:
		return resp, toRequestError(errorf(CodeInvalidParams, "missing config option value"))
	}
	b, err := s.lookup(sid)
	if err != nil {
		return resp, toRequestError(err)
	}
	if b.readOnly {
		return resp, toRequestError(b.refuseChange("given another model or mode", "its model and mode are fixed when it is delegated"))
	}
	switch {
	case configID == ConfigMode:
		if err := s.setMode(ctx, b, value); err != nil {
			return resp, err
		}
	case configID == ConfigModel && s.offersModels():
		if err := s.chooseModel(ctx, b, value); err != nil {
			return resp, err
		}
	default:
		return resp, toRequestError(errorf(CodeInvalidParams, "unknown config option %q (available: %s)", configID, s.configIDs()))
	}
	resp.ConfigOptions = s.configOptionsOf(b)
	return resp, nil
}

// configIDs lists the ids of the offered config options.
func (s *Server) configIDs() string {
	ids := ConfigMode
	if s.offersModels() {
		ids = ConfigModel + ", " + ids
	}
	if s.offersSandboxOption() {
		ids += ", " + ConfigSandbox + " (boolean)"
	}
	if s.wire.booleanConfig.Load() && s.opts.Thinking != nil {
		ids += ", " + ConfigThinking + " (boolean, where the session's model thinks)"
	}
	return ids
}

// chooseModel records and announces model value as session b's model;
// errors are already mapped for the client.
func (s *Server) chooseModel(ctx context.Context, b *bound, value string) error {
	if !s.knownModel(value) {
		ids := make([]string, len(s.opts.Models))
		for i, m := range s.opts.Models {
			ids[i] = m.ID
		}
		return toRequestError(errorf(CodeInvalidParams, "unknown model %q (available: %s)", value, strings.Join(ids, ", ")))
	}
	// Durable first, then in force (as for modes).
	s.gate.switching.Lock()
	defer s.gate.switching.Unlock()
	s.SessionModel(b.id) // fill the cache from the log first
	ev, aerr := b.sess.Append(TypeSessionModel, SessionModelData{ModelID: value}, session.Ignorable())
	if aerr != nil {
		return toRequestError(fmt.Errorf("record model of session %s: %w", b.id, aerr))
	}
	if err := s.makeDurable(ctx, b.id, ev.Seq); err != nil {
		return toRequestError(fmt.Errorf("record model of session %s: %w", b.id, err))
	}
	s.modelChoice.mu.Lock()
	s.modelChoice.models[b.id] = value
	s.modelChoice.mu.Unlock()
	s.log.Info("session model set", "session_id", b.id, "model", value)
	if err := s.flush(ctx, b); err != nil {
		return toRequestError(err)
	}
	return nil
}

// legacyModels is the legacy (unstable) models field of a session/new or
// session/load answer, for clients that predate configOptions; nil when
// configOptions are not offered.
func (s *Server) legacyModels(b *bound) *acpsdk.SessionModelState {
	if !s.offersModels() || b.readOnly {
		return nil
	}
	st := &acpsdk.SessionModelState{CurrentModelId: acpsdk.ModelId(s.SessionModel(b.id))}
	for _, m := range s.opts.Models {
		info := acpsdk.ModelInfo{ModelId: acpsdk.ModelId(m.ID), Name: m.Name}
		if m.Description != "" {
			info.Description = acpsdk.Ptr(m.Description)
		}
		st.AvailableModels = append(st.AvailableModels, info)
	}
	return st
}

// UnstableSetSessionModel is the legacy session/set_model: the same choice
// as session/set_config_option of the model option (recorded, announced as
// config_option_update). -32601 when no model picker is offered.
func (s *Server) UnstableSetSessionModel(ctx context.Context, p acpsdk.UnstableSetSessionModelRequest) (resp acpsdk.UnstableSetSessionModelResponse, err error) {
	if !s.offersModels() {
		return resp, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetModel)
	}
	defer s.recoverTo("session/set_model", &err)
	b, err := s.lookup(string(p.SessionId))
	if err != nil {
		return resp, toRequestError(err)
	}
	if b.readOnly {
		return resp, toRequestError(b.refuseChange("given another model", "its model is fixed when it is delegated"))
	}
	return resp, s.chooseModel(ctx, b, string(p.ModelId))
}

// modelUpdate renders a session/model event as config_option_update and
// remembers the choice; nil without a model picker or for a model no
// longer configured.
func (t *translator) modelUpdate(ev session.Event) []acpsdk.SessionUpdate {
	if len(t.models) < 2 {
		return nil
	}
	d, err := session.DecodeData[SessionModelData](ev)
	if err != nil || !t.models.known(d.ModelID) {
		return nil
	}
	t.model = d.ModelID
	return []acpsdk.SessionUpdate{t.configUpdate()}
}

// configUpdate is the config_option_update with the full configOptions as
// the events folded so far leave them.
func (t *translator) configUpdate() acpsdk.SessionUpdate {
	return acpsdk.SessionUpdate{ConfigOptionUpdate: &acpsdk.SessionConfigOptionUpdate{
		ConfigOptions: sessionConfig(t.models, t.model, t.configModes, t.mode, t.sandbox, t.thinking),
	}}
}

// withModels sets the models t renders session/model events with.
func (t *translator) withModels(models []ModelOption) *translator {
	t.models = models
	return t
}
