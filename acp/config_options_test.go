package acp_test

// Tests of the model picker (config_options.go) over the real ACP
// connection: two scripted models, each behind a recording wrapper.

import (
	"context"
	"io"
	"iter"
	"slices"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// routesSeen records, per model, the script key and route of every request
// it served.
type routesSeen struct {
	model.Model
	mu   sync.Mutex
	seen []string
}

func (m *routesSeen) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m.mu.Lock()
	m.seen = append(m.seen, req.Caller.ScriptKey+"@"+req.Route.Provider+"/"+req.Route.Model)
	m.mu.Unlock()
	return m.Model.Stream(ctx, req)
}

func (m *routesSeen) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

const pickerScript = `
model:
  main:
    - text: FIRST
    - tool_calls:
        - id: call-sub
          name: subagent
          arguments: '{"description": "Helper", "prompt": "Help.", "run_in_background": false}'
    - text: SECOND
    - text: THIRD
  Helper:
    - text: HELPED
`

var (
	routeFast  = model.Route{Provider: "script", Model: "fast"}
	routeSmart = model.Route{Provider: "script", Model: "smart"}
)

// startModels serves a composition on dir offering the given models.
func startModels(t *testing.T, dir string, choices ...app.ModelChoice) *env {
	t.Helper()
	a, err := app.New(app.Config{
		DataDir:      dir,
		ModelChoices: choices,
		Version:      "test",
		Logger:       testLogger(t),
		Testing:      &testhooks.Hooks{NoSync: true, PanicOnBug: true},
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &env{t: t, dir: dir, app: a, rec: newRecorder(), c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	e.cs = acpsdk.NewClientSideConnection(e.rec, c2aW, a2cR)
	t.Cleanup(e.stop)
	return e
}

// twoModels returns the fast (default) and smart models, each recording.
func twoModels(t *testing.T) (fast, smart *routesSeen, choices []app.ModelChoice) {
	fast = &routesSeen{Model: loadScript(t, pickerScript)}
	smart = &routesSeen{Model: loadScript(t, pickerScript)}
	return fast, smart, []app.ModelChoice{
		{Route: routeFast, Name: "Fast", Model: fast},
		{Route: routeSmart, Name: "Smart", Model: smart},
	}
}

// modelOption returns the model select of configOptions and checks its
// shape: the model, then the mode.
func modelOption(t *testing.T, opts []acpsdk.SessionConfigOption) *acpsdk.SessionConfigOptionSelect {
	t.Helper()
	if len(opts) != 2 || opts[0].Select == nil || opts[1].Select == nil || opts[1].Select.Id != "mode" {
		t.Fatalf("configOptions = %+v, want the model and mode selects", opts)
	}
	sel := opts[0].Select
	if sel.Id != "model" || sel.Category == nil || *sel.Category != acpsdk.SessionConfigOptionCategoryModel {
		t.Errorf("option id %q category %v, want model/model", sel.Id, sel.Category)
	}
	var values, names []string
	for _, o := range *sel.Options.Ungrouped {
		values, names = append(values, string(o.Value)), append(names, o.Name)
	}
	if !slices.Equal(values, []string{"script/fast", "script/smart"}) || !slices.Equal(names, []string{"Fast", "Smart"}) {
		t.Errorf("options %v %v", values, names)
	}
	return sel
}

func setModel(ctx context.Context, e *env, id, value string) (acpsdk.SetSessionConfigOptionResponse, error) {
	return e.cs.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: acpsdk.SessionId(id), ConfigId: "model", Value: acpsdk.SessionConfigValueId(value),
	}})
}

func TestModelPickerOnlyWithTwoModels(t *testing.T) {
	ctx := ctxFor(t)
	one := start(t, t.TempDir(), loadScript(t, pickerScript))
	one.initialize(ctx)
	r, err := one.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ConfigOptions) != 1 || r.ConfigOptions[0].Select == nil || r.ConfigOptions[0].Select.Id != "mode" {
		t.Errorf("one model: configOptions %+v, want the mode only", r.ConfigOptions)
	}
	_, err = setModel(ctx, one, string(r.SessionId), "script/fast")
	wantRPCError(t, err, -32602, `unknown config option "model" (available: mode)`)

	_, _, choices := twoModels(t)
	two := startModels(t, t.TempDir(), choices...)
	two.initialize(ctx)
	r, err = two.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if sel := modelOption(t, r.ConfigOptions); sel.CurrentValue != "script/fast" {
		t.Errorf("current = %q, want the first model", sel.CurrentValue)
	}
}

func TestSetConfigOptionSwitchesTheNextRequestAndSurvivesRestart(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	fast, smart, choices := twoModels(t)
	e := startModels(t, dir, choices...)
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	if _, err := e.prompt(ctx, id, "one"); err != nil {
		t.Fatal(err)
	}

	resp, err := setModel(ctx, e, id, "script/smart")
	if err != nil {
		t.Fatalf("set_config_option: %v", err)
	}
	if sel := modelOption(t, resp.ConfigOptions); sel.CurrentValue != "script/smart" {
		t.Errorf("answer current = %q", sel.CurrentValue)
	}
	// The update is on the wire before the answer.
	var updates []string
	for _, n := range e.rec.snapshot(id) {
		if u := n.Update.ConfigOptionUpdate; u != nil {
			updates = append(updates, string(modelOption(t, u.ConfigOptions).CurrentValue))
		}
	}
	if !slices.Equal(updates, []string{"script/smart"}) {
		t.Errorf("config_option_update values = %v", updates)
	}

	// The next turn (and the child it delegates to) uses the smart model.
	if _, err := e.prompt(ctx, id, "two"); err != nil {
		t.Fatal(err)
	}
	if got, want := fast.calls(), []string{"main@script/fast"}; !slices.Equal(got, want) {
		t.Errorf("fast model saw %v, want %v", got, want)
	}
	if got, want := smart.calls(), []string{"main@script/smart", "Helper@script/smart", "main@script/smart"}; !slices.Equal(got, want) {
		t.Errorf("smart model saw %v, want %v", got, want)
	}
	// The log records which model answered.
	sess, _ := e.app.Sessions.Get(id)
	var sources []string
	for _, ev := range sess.MustEvents() {
		if ev.Type == session.TypeAssistantMessage {
			d, _ := session.DecodeData[session.AssistantMessageData](ev)
			sources = append(sources, d.Message.Source.Model)
		}
	}
	if want := []string{"fast", "smart", "smart"}; !slices.Equal(sources, want) {
		t.Errorf("assistant message sources = %v, want %v", sources, want)
	}
	e.stop()

	// A fresh process: session/load answers with the choice, replays the
	// update, and the next request goes to the smart model.
	fast2, smart2, choices2 := twoModels(t)
	e2 := startModels(t, dir, choices2...)
	e2.initialize(ctx)
	lr, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if sel := modelOption(t, lr.ConfigOptions); sel.CurrentValue != "script/smart" {
		t.Errorf("load answer current = %q", sel.CurrentValue)
	}
	replayed := 0
	for _, n := range e2.rec.snapshot(id) {
		if u := n.Update.ConfigOptionUpdate; u != nil && modelOption(t, u.ConfigOptions).CurrentValue == "script/smart" {
			replayed++
		}
	}
	if replayed != 1 {
		t.Errorf("replayed config_option_update %d times, want 1", replayed)
	}
	if _, err := e2.prompt(ctx, id, "three"); err != nil {
		t.Fatal(err)
	}
	if len(fast2.calls()) != 0 || !slices.Equal(smart2.calls(), []string{"main@script/smart"}) {
		t.Errorf("after restart: fast %v, smart %v", fast2.calls(), smart2.calls())
	}
}

func TestSetConfigOptionRejectsBadInput(t *testing.T) {
	ctx := ctxFor(t)
	_, _, choices := twoModels(t)
	e := startModels(t, t.TempDir(), choices...)
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	tests := []struct {
		name string
		req  acpsdk.SetSessionConfigOptionRequest
		want string
	}{
		{"unknown model", acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: acpsdk.SessionId(id), ConfigId: "model", Value: "openai/gpt-9"}}, `unknown model "openai/gpt-9"`},
		{"unknown option", acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: acpsdk.SessionId(id), ConfigId: "effort", Value: "high"}}, `unknown config option "effort"`},
		{"boolean", acpsdk.SetSessionConfigOptionRequest{Boolean: &acpsdk.SetSessionConfigOptionBoolean{SessionId: acpsdk.SessionId(id), ConfigId: "model", Type: "boolean", Value: true}}, "not a boolean option"},
		{"unknown mode", acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: acpsdk.SessionId(id), ConfigId: "mode", Value: "yolo"}}, `unknown mode "yolo"`},
		{"unknown session", acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: "nope", ConfigId: "model", Value: "script/smart"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.cs.SetSessionConfigOption(ctx, tt.req)
			code := -32602
			if tt.name == "unknown session" {
				code = -32002
			}
			wantRPCError(t, err, code, tt.want)
		})
	}
	// Nothing was recorded.
	sess, _ := e.app.Sessions.Get(id)
	for _, ev := range sess.MustEvents() {
		if ev.Type == "session/model" || ev.Type == "session/mode" {
			t.Errorf("rejected choice recorded: %+v", ev)
		}
	}
}

// gatedModel holds its first request until release is closed, after
// signalling entered.
type gatedModel struct {
	model.Model
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (m *gatedModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	first := false
	m.once.Do(func() { first = true })
	if first {
		close(m.entered)
		select {
		case <-m.release:
		case <-ctx.Done():
		}
	}
	return m.Model.Stream(ctx, req)
}

const midTurnScript = `
model:
  main:
    - tool_calls:
        - id: call-plan
          name: todo
          arguments: '{"todos": [{"content": "Look", "status": "pending"}]}'
    - text: DONE
`

// A switch while a turn runs is answered at once and applies from the
// turn's next model request; the request in flight keeps its model.
func TestSetConfigOptionDuringATurnAppliesToTheNextRequest(t *testing.T) {
	ctx := ctxFor(t)
	gate := &gatedModel{Model: loadScript(t, midTurnScript), entered: make(chan struct{}), release: make(chan struct{})}
	fast := &routesSeen{Model: gate}
	smart := &routesSeen{Model: loadScript(t, midTurnScript)}
	e := startModels(t, t.TempDir(),
		app.ModelChoice{Route: routeFast, Model: fast},
		app.ModelChoice{Route: routeSmart, Model: smart})
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	done := make(chan error, 1)
	go func() {
		_, err := e.prompt(ctx, id, "plan")
		done <- err
	}()
	select {
	case <-gate.entered:
	case <-ctx.Done():
		t.Fatal("first model request never started")
	}
	if _, err := setModel(ctx, e, id, "script/smart"); err != nil {
		t.Fatalf("set_config_option during a turn: %v", err)
	}
	close(gate.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := fast.calls(), []string{"main@script/fast"}; !slices.Equal(got, want) {
		t.Errorf("fast model saw %v, want %v", got, want)
	}
	if got, want := smart.calls(), []string{"main@script/smart"}; !slices.Equal(got, want) {
		t.Errorf("smart model saw %v, want %v", got, want)
	}
}

// The mode is offered twice, as the modes field and as a config option of
// category mode (CodeCompanion reads only configOptions): a switch through
// session/set_config_option and one through session/set_mode show the same
// state in both places, in the answers, in the live updates and after a
// reload.
func TestModeConfigOptionInStepWithSetMode(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	e := start(t, dir, loadScript(t, pickerScript))
	e.initialize(ctx)
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(r.SessionId)
	sel := modeOption(t, r.ConfigOptions)
	if sel.CurrentValue != "default" || r.Modes == nil || r.Modes.CurrentModeId != "default" {
		t.Fatalf("new session: config mode %q, modes %+v", sel.CurrentValue, r.Modes)
	}
	var values []string
	for _, o := range *sel.Options.Ungrouped {
		values = append(values, string(o.Value))
	}
	var modeIDs []string
	for _, m := range r.Modes.AvailableModes {
		modeIDs = append(modeIDs, string(m.Id))
	}
	if !slices.Equal(values, modeIDs) {
		t.Errorf("config option values %v, modes %v: want the same", values, modeIDs)
	}

	// Through the config option: the answer, current_mode_update and
	// config_option_update all say plan.
	resp, err := e.cs.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: acpsdk.SessionId(id), ConfigId: "mode", Value: "plan"}})
	if err != nil {
		t.Fatalf("set_config_option mode: %v", err)
	}
	if got := modeOption(t, resp.ConfigOptions).CurrentValue; got != "plan" {
		t.Errorf("set_config_option answer mode = %q, want plan", got)
	}
	if got, want := modeUpdates(t, e.rec.snapshot(id)), []string{"current plan", "config plan"}; !slices.Equal(got, want) {
		t.Errorf("updates after set_config_option = %q, want %q", got, want)
	}
	// Through session/set_mode: the same two updates.
	e.rec.reset()
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "accept-edits"}); err != nil {
		t.Fatalf("set_mode: %v", err)
	}
	if got, want := modeUpdates(t, e.rec.snapshot(id)), []string{"current accept-edits", "config accept-edits"}; !slices.Equal(got, want) {
		t.Errorf("updates after set_mode = %q, want %q", got, want)
	}
	// A reload answers it in both places and replays both updates.
	e.stop()
	e2 := start(t, dir, loadScript(t, pickerScript))
	e2.initialize(ctx)
	lr, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if got := modeOption(t, lr.ConfigOptions).CurrentValue; got != "accept-edits" || lr.Modes == nil || lr.Modes.CurrentModeId != "accept-edits" {
		t.Errorf("load: config mode %q, modes %+v; want accept-edits in both", got, lr.Modes)
	}
	if got, want := modeUpdates(t, e2.rec.snapshot(id)), []string{"current plan", "config plan", "current accept-edits", "config accept-edits"}; !slices.Equal(got, want) {
		t.Errorf("replayed mode updates = %q, want %q", got, want)
	}
	// Live updates after the replay continue from the replayed state.
	e2.rec.reset()
	if _, err := e2.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "bypass"}); err != nil {
		t.Fatal(err)
	}
	if got, want := modeUpdates(t, e2.rec.snapshot(id)), []string{"current bypass", "config bypass"}; !slices.Equal(got, want) {
		t.Errorf("updates after reload and set_mode = %q, want %q", got, want)
	}
}

// modeOption returns the mode select of configOptions.
func modeOption(t *testing.T, opts []acpsdk.SessionConfigOption) *acpsdk.SessionConfigOptionSelect {
	t.Helper()
	for _, o := range opts {
		if o.Select != nil && o.Select.Id == "mode" {
			if o.Select.Category == nil || *o.Select.Category != acpsdk.SessionConfigOptionCategoryMode {
				t.Errorf("mode option category = %v, want mode", o.Select.Category)
			}
			return o.Select
		}
	}
	t.Fatalf("configOptions = %+v, want a mode select", opts)
	return nil
}

// modeUpdates lists current_mode_update and config_option_update
// notifications as "current MODE" and "config MODE".
func modeUpdates(t *testing.T, ns []acpsdk.SessionNotification) []string {
	t.Helper()
	var out []string
	for _, n := range ns {
		switch {
		case n.Update.CurrentModeUpdate != nil:
			out = append(out, "current "+string(n.Update.CurrentModeUpdate.CurrentModeId))
		case n.Update.ConfigOptionUpdate != nil:
			out = append(out, "config "+string(modeOption(t, n.Update.ConfigOptionUpdate.ConfigOptions).CurrentValue))
		}
	}
	return out
}

// The legacy (unstable) models field and session/set_model make the same
// choice; with one model the method stays unsupported.
func TestLegacySetModel(t *testing.T) {
	ctx := ctxFor(t)
	one := start(t, t.TempDir(), loadScript(t, pickerScript))
	one.initialize(ctx)
	oneID := one.newSession(ctx, tempCwd(t))
	_, err := one.cs.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: acpsdk.SessionId(oneID), ModelId: "script/fast"})
	wantRPCError(t, err, -32601, "")

	fast, smart, choices := twoModels(t)
	e := startModels(t, t.TempDir(), choices...)
	e.initialize(ctx)
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Models == nil || r.Models.CurrentModelId != "script/fast" || len(r.Models.AvailableModels) != 2 || r.Models.AvailableModels[1].ModelId != "script/smart" {
		t.Fatalf("legacy models = %+v", r.Models)
	}
	id := string(r.SessionId)
	_, err = e.cs.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: r.SessionId, ModelId: "nope"})
	wantRPCError(t, err, -32602, `unknown model "nope"`)
	if _, err := e.cs.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: r.SessionId, ModelId: "script/smart"}); err != nil {
		t.Fatalf("session/set_model: %v", err)
	}
	if _, err := e.prompt(ctx, id, "one"); err != nil {
		t.Fatal(err)
	}
	if len(fast.calls()) != 0 || !slices.Equal(smart.calls(), []string{"main@script/smart"}) {
		t.Errorf("fast %v, smart %v", fast.calls(), smart.calls())
	}
	updates := 0
	for _, n := range e.rec.snapshot(id) {
		if n.Update.ConfigOptionUpdate != nil {
			updates++
		}
	}
	if updates != 1 {
		t.Errorf("%d config_option_update after session/set_model, want 1", updates)
	}
}
