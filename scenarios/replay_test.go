package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLiveAndReplayAgree runs every scenario over the real ACP connection,
// then restarts the agent and loads each top-level session the scenario
// used: for every tool call the client saw live, the session/load replay
// must show the same kind, title, final status, _meta, raw input and
// output and final content. Calls that only replay (a seeded session's
// history) are not compared; a session created in the run must replay no
// call it did not show live.
func TestLiveAndReplayAgree(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.ExternalAgents {
				needAgentBinary(t)
			}
			withLoads, refs := thenReloadEverySession(sc)
			ctx, cancel := context.WithTimeoutCause(t.Context(), 2*time.Minute, errors.New("scenario did not finish within 2 minutes"))
			defer cancel()
			rec, err := Record(ctx, withLoads, Composition, t.TempDir(), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			live, replay, err := splitLiveAndReplay(rec.Wire)
			if err != nil {
				t.Fatal(err)
			}
			if len(replay) != len(refs) {
				t.Fatalf("replayed %d sessions, want %d (one per reference %v)", len(replay), len(refs), refs)
			}
			seeded := map[string]bool{}
			for _, s := range sc.Seed {
				seeded[s.Header.ID] = true
			}
			compared := 0
			for id, liveCalls := range live {
				replayCalls, ok := replay[id]
				if !ok {
					continue // a child's transcript is never streamed live
				}
				for _, callID := range slices.Sorted(maps.Keys(liveCalls)) {
					compared++
					got, ok := replayCalls[callID]
					if !ok {
						t.Errorf("session %s: tool call %s was shown live but not replayed", id, callID)
						continue
					}
					if want := liveCalls[callID]; got.String() != want.String() {
						t.Errorf("session %s, tool call %s:\nlive:   %s\nreplay: %s", id, callID, want, got)
					}
				}
				if seeded[id] {
					continue
				}
				for callID := range replayCalls {
					if _, ok := liveCalls[callID]; !ok {
						t.Errorf("session %s: tool call %s replayed but never shown live", id, callID)
					}
				}
			}
			t.Logf("%d tool calls compared", compared)
		})
	}
}

// thenReloadEverySession returns sc with steps appended that restart the
// agent and load every session the scenario created or loaded, and those
// session references in order.
func thenReloadEverySession(sc *Scenario) (*Scenario, []string) {
	var refs []string
	for _, st := range sc.Steps {
		ref := ""
		switch st.Op {
		case OpNewSession:
			ref = st.As
		case OpLoadSession:
			ref = st.Session
		case OpDeleteSession:
			// A deleted session has nothing left to load.
			refs = slices.DeleteFunc(refs, func(r string) bool { return r == st.Session })
		}
		if ref != "" && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	out := *sc
	out.Steps = slices.Clone(sc.Steps)
	out.Steps = append(out.Steps, Step{Op: OpRestart}, Step{Op: OpInitialize})
	for _, ref := range refs {
		out.Steps = append(out.Steps, Step{Op: OpLoadSession, Session: ref})
	}
	for i := range out.Steps {
		out.Steps[i].Index = i + 1
	}
	return &out, refs
}

// callState is what a client knows about one tool call after folding its
// tool_call and tool_call_update notifications in order.
type callState struct {
	Kind, Title, Status string
	Meta                map[string]any
	RawInput, RawOutput any
	Content             any
}

func (c callState) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// fold applies one tool_call or tool_call_update to c, as a client does:
// fields present in the update replace the known ones; _meta objects merge
// (a later key replaces an earlier one).
func (c *callState) fold(u map[string]any) {
	str := func(k string, dst *string) {
		if v, ok := u[k].(string); ok {
			*dst = v
		}
	}
	str("kind", &c.Kind)
	str("title", &c.Title)
	str("status", &c.Status)
	for k, dst := range map[string]*any{"rawInput": &c.RawInput, "rawOutput": &c.RawOutput, "content": &c.Content} {
		if v, ok := u[k]; ok {
			*dst = v
		}
	}
	if m, ok := u["_meta"].(map[string]any); ok {
		if c.Meta == nil {
			c.Meta = map[string]any{}
		}
		maps.Copy(c.Meta, m)
	}
}

// sessionCalls maps session id -> tool call id -> folded state.
type sessionCalls map[string]map[string]*callState

func (s sessionCalls) fold(params map[string]any) {
	id, _ := params["sessionId"].(string)
	u, _ := params["update"].(map[string]any)
	kind, _ := u["sessionUpdate"].(string)
	callID, _ := u["toolCallId"].(string)
	if kind != "tool_call" && kind != "tool_call_update" || callID == "" {
		return
	}
	if s[id] == nil {
		s[id] = map[string]*callState{}
	}
	c := s[id][callID]
	if c == nil {
		c = &callState{}
		s[id][callID] = c
	}
	c.fold(u)
}

// splitLiveAndReplay folds a wire recording into the tool calls each
// session showed live (every process before the last restart, outside
// session/load responses) and those the last process replayed in answer
// to session/load (by session id).
func splitLiveAndReplay(wire []byte) (live, replay sessionCalls, err error) {
	lines := bytes.Split(bytes.TrimSpace(wire), []byte("\n"))
	last := -1
	for i, l := range lines {
		if bytes.Equal(l, []byte(`{"scenario":"restart"}`)) {
			last = i
		}
	}
	if last < 0 {
		return nil, nil, errors.New("the recording has no restart")
	}
	live, replay = sessionCalls{}, sessionCalls{}
	loading := map[string]string{} // open session/load request id -> session id
	for i, l := range lines {
		var f struct {
			Client, Agent map[string]any
			Scenario      string
		}
		if err := json.Unmarshal(l, &f); err != nil {
			return nil, nil, fmt.Errorf("wire line %d: %w", i+1, err)
		}
		if f.Scenario != "" {
			clear(loading)
			continue
		}
		if f.Client != nil {
			if f.Client["method"] == "session/load" {
				p, _ := f.Client["params"].(map[string]any)
				sid, _ := p["sessionId"].(string)
				loading[fmt.Sprint(f.Client["id"])] = sid
			}
			continue
		}
		if _, isResponse := f.Agent["method"]; !isResponse {
			delete(loading, fmt.Sprint(f.Agent["id"]))
			continue
		}
		if f.Agent["method"] != "session/update" {
			continue
		}
		params, _ := f.Agent["params"].(map[string]any)
		sid, _ := params["sessionId"].(string)
		if u, _ := params["update"].(map[string]any); v1SubagentKinds[fmt.Sprint(u["sessionUpdate"])] {
			// ACP v1 subagent frames carry no tool call; a parent's load
			// re-announces its grandchildren on their own parent.
			continue
		}
		inLoad := slices.Contains(slices.Collect(maps.Values(loading)), sid)
		switch {
		case i < last && !inLoad:
			live.fold(params)
		case i > last && inLoad:
			replay.fold(params)
		case i > last:
			return nil, nil, fmt.Errorf("wire line %d: an update outside a session/load after the last restart: %s", i+1, strings.TrimSpace(string(l)))
		}
	}
	// Sessions that replayed no tool call still count as replayed.
	for i := last + 1; i < len(lines); i++ {
		var f struct{ Client map[string]any }
		if json.Unmarshal(lines[i], &f) == nil && f.Client["method"] == "session/load" {
			p, _ := f.Client["params"].(map[string]any)
			if sid, _ := p["sessionId"].(string); replay[sid] == nil {
				replay[sid] = map[string]*callState{}
			}
		}
	}
	return live, replay, nil
}

// v1SubagentKinds are the ACP v1 subagent-session updates.
var v1SubagentKinds = map[string]bool{"subagent_update": true, "session_message": true, "session_message_chunk": true}
