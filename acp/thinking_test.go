package acp_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// thinkingValue finds the thinking option in configOptions.
func thinkingValue(opts []any) (on, found bool) {
	for _, o := range opts {
		m, _ := o.(map[string]any)
		if m["id"] == "thinking" {
			v, _ := m["currentValue"].(bool)
			return v, m["type"] == "boolean"
		}
	}
	return false, false
}

// thinkingAnnounced lists the thinking values of the config_option_update
// notifications session id received.
func (e *protoEnv) thinkingAnnounced(id string) []bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []bool
	for _, raw := range e.updates {
		var n struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind          string `json:"sessionUpdate"`
				ConfigOptions []any  `json:"configOptions"`
			} `json:"update"`
		}
		_ = json.Unmarshal(raw, &n)
		if n.SessionID != id || n.Update.Kind != "config_option_update" {
			continue
		}
		if on, found := thinkingValue(n.Update.ConfigOptions); found {
			out = append(out, on)
		}
	}
	return out
}

// thoughts is the reasoning session id was shown.
func (e *protoEnv) thoughts(id string) string {
	var out []string
	for _, k := range e.kinds(id) {
		if t, ok := strings.CutPrefix(k, "agent_thought_chunk "); ok {
			out = append(out, t)
		}
	}
	return strings.Join(out, "|")
}

// TestThinkingBooleanConfigOption: a client that opts in to boolean config
// options gets a "thinking" option while the session's model thinks (here
// a scripted model whose replies reason). Turned off, it is recorded in
// the log, announced, and the next model request goes without thinking
// (the reply comes without its reasoning); a session/load in another
// process answers with it off, replays the announcement, and keeps
// thinking off; so does a resume, until the person turns it on again. Every frame is checked against the ACP schema.
func TestThinkingBooleanConfigOption(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	script := "model:\n  main:\n" + strings.Repeat("    - reasoning: pondering\n      text: done\n", 4)
	optIn := map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"session": map[string]any{"configOptions": map[string]any{"boolean": map[string]any{}}}}}
	var res map[string]any
	var nr struct {
		SessionID     string `json:"sessionId"`
		ConfigOptions []any  `json:"configOptions"`
	}
	set := func(e *protoEnv, id string, on bool) ([]any, error) {
		var sr struct {
			ConfigOptions []any `json:"configOptions"`
		}
		err := e.call(ctx, "session/set_config_option", map[string]any{"sessionId": id, "configId": "thinking", "type": "boolean", "value": on}, &sr)
		return sr.ConfigOptions, err
	}

	// Without the opt-in there is no thinking option.
	plain := startProto(t, t.TempDir(), protoOpts{script: script})
	plain.initialize(ctx)
	plain.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &nr)
	if _, found := thinkingValue(nr.ConfigOptions); found {
		t.Errorf("thinking option offered without the client's opt-in: %v", nr.ConfigOptions)
	}
	if _, err := set(plain, nr.SessionID, false); rpcCode(err) != -32602 {
		t.Errorf("set thinking without the opt-in = %v, want -32602", err)
	}
	plain.stop()

	// A model that does not think has no thinking option, even opted in.
	still := startProto(t, t.TempDir(), protoOpts{script: "model:\n  main:\n    - text: done\n"})
	still.mustCall(ctx, "initialize", optIn, &res)
	still.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &nr)
	if _, found := thinkingValue(nr.ConfigOptions); found {
		t.Errorf("thinking option offered for a model that does not think: %v", nr.ConfigOptions)
	}
	if _, err := set(still, nr.SessionID, false); rpcCode(err) != -32602 {
		t.Errorf("set thinking for a model that does not think = %v, want -32602", err)
	}
	still.stop()

	e := startProto(t, dir, protoOpts{script: script})
	e.mustCall(ctx, "initialize", optIn, &res)
	e.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &nr)
	id := nr.SessionID
	if on, found := thinkingValue(nr.ConfigOptions); !found || !on {
		t.Fatalf("configOptions = %v, want the thinking option, on", nr.ConfigOptions)
	}
	e.prompt(ctx, id, "think first")
	waitFor(t, func() bool { return e.thoughts(id) != "" })
	if got := e.thoughts(id); got != "pondering" {
		t.Fatalf("thinking on: thoughts %q, want the model's reasoning", got)
	}
	e.resetUpdates()
	opts, err := set(e, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if on, found := thinkingValue(opts); !found || on {
		t.Fatalf("set_config_option answer = %v, want thinking off", opts)
	}
	// Notifications reach the client on their own goroutine.
	waitFor(t, func() bool { return len(e.thinkingAnnounced(id)) > 0 })
	if got := e.thinkingAnnounced(id); !slices.Equal(got, []bool{false}) {
		t.Errorf("announced thinking %v, want one config_option_update with it off", got)
	}
	e.prompt(ctx, id, "answer straight away")
	if got := e.thoughts(id); got != "" {
		t.Errorf("thinking off: thoughts %q, want none", got)
	}
	e.stop()
	raw, err := os.ReadFile(logFile(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"type":"session/thinking"`) || !strings.Contains(string(raw), `"enabled":false`) {
		t.Errorf("the log does not record the choice:\n%s", raw)
	}

	// A load in a new process keeps the choice: in the answer, in the
	// replay and for the next request.
	f := startProto(t, dir, protoOpts{script: script})
	f.mustCall(ctx, "initialize", optIn, &res)
	var lr struct {
		ConfigOptions []any `json:"configOptions"`
	}
	f.mustCall(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &lr)
	if on, found := thinkingValue(lr.ConfigOptions); !found || on {
		t.Errorf("loaded configOptions = %v, want thinking off", lr.ConfigOptions)
	}
	waitFor(t, func() bool { return len(f.thinkingAnnounced(id)) > 0 })
	if got := f.thinkingAnnounced(id); !slices.Equal(got, []bool{false}) {
		t.Errorf("replayed thinking %v, want the recorded choice, off", got)
	}
	waitFor(t, func() bool { return f.thoughts(id) != "" })
	if got := f.thoughts(id); got != "pondering" {
		t.Errorf("replayed thoughts %q, want the first turn's reasoning only", got)
	}
	f.resetUpdates()
	f.prompt(ctx, id, "still straight")
	if got := f.thoughts(id); got != "" {
		t.Errorf("after the load, thinking off: thoughts %q, want none", got)
	}
	f.stop()

	// A resume in a third process answers with the choice too, and
	// turning thinking on again makes the next answer reason.
	f = startProto(t, dir, protoOpts{script: script})
	f.mustCall(ctx, "initialize", optIn, &res)
	f.mustCall(ctx, "session/resume", map[string]any{"sessionId": id, "cwd": cwd}, &lr)
	if on, found := thinkingValue(lr.ConfigOptions); !found || on {
		t.Errorf("resumed configOptions = %v, want thinking off", lr.ConfigOptions)
	}
	if opts, err := set(f, id, true); err != nil {
		t.Fatal(err)
	} else if on, _ := thinkingValue(opts); !on {
		t.Errorf("set_config_option answer = %v, want thinking on", opts)
	}
	f.resetUpdates()
	f.prompt(ctx, id, "think again")
	waitFor(t, func() bool { return f.thoughts(id) != "" })
	if got := f.thoughts(id); got != "pondering" {
		t.Errorf("thinking on again: thoughts %q, want the model's reasoning", got)
	}
}
