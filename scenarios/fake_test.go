package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
)

// fakeSystem is a minimal ACP agent on the real session store and real
// persistence: every prompt becomes one echo turn. It lets the runner,
// waits, recorder and renderer be tested without the full composition.
type fakeSystem struct {
	store *session.Store
	ps    *persistence.Store
	cfg   Config
}

func fakeFactory(_ context.Context, cfg Config) (System, error) {
	st := session.NewStore(cfg.Sources)
	ps, err := persistence.Open(cfg.DataDir, persistence.Options{NoSync: true, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	ps.Attach(st)
	return &fakeSystem{store: st, ps: ps, cfg: cfg}, nil
}

func (f *fakeSystem) Store() *session.Store { return f.store }

func (f *fakeSystem) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(stream{Reader: in, Writer: out, closeFn: func() error { return nil }}),
		jsonrpc2.HandlerWithError(f.handle))
	<-conn.DisconnectNotify()
	return f.ps.Close()
}

func (f *fakeSystem) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if req.Params != nil {
		_ = json.Unmarshal(*req.Params, &p)
	}
	switch req.Method {
	case "initialize":
		return map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "fake", "version": "0"}}, nil
	case "session/new":
		s, err := f.store.Create(session.Header{Cwd: p.Cwd}, session.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return map[string]any{"sessionId": s.ID()}, nil
	case "session/load":
		snap, err := f.ps.Load(ctx, p.SessionID)
		if err != nil {
			return nil, err
		}
		if _, err := f.store.Adopt(snap.Header, snap.Events); err != nil {
			return nil, err
		}
		return map[string]any{}, nil
	case "session/cancel":
		return nil, nil
	case "session/prompt":
		s, ok := f.store.Get(p.SessionID)
		if !ok {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "unknown session"}
		}
		text := p.Prompt[0].Text
		turn := session.LastTurn(s.MustEvents()) + 1
		one := 1
		user := session.Message{ID: s.NewID(), Role: session.RoleUser, Content: []session.Block{session.Text(text)}, Source: session.Source{Kind: session.SourceUser}}
		reply := session.Message{ID: s.NewID(), Role: session.RoleAssistant, Content: []session.Block{session.Text("echo: " + text)}, Source: session.Source{Kind: session.SourceModel}}
		for _, a := range []struct {
			typ  string
			data any
		}{
			{session.TypeInboxSpliced, session.InboxSplicedData{Target: session.InboxNextTurn, Inserted: []session.Message{user}}},
			{session.TypeTurnStart, session.TurnData{Turn: turn}},
			{session.TypeInboxSpliced, session.InboxSplicedData{Target: session.InboxNextTurn, RemovedCount: &one, Inserted: []session.Message{}}},
			{session.TypeUserMessage, user},
			{session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: 1, Message: reply}},
		} {
			if _, err := s.Append(a.typ, a.data); err != nil {
				return nil, err
			}
		}
		if err := conn.Notify(ctx, "session/update", map[string]any{"sessionId": s.ID(), "update": map[string]any{
			"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "echo: " + text}}}); err != nil {
			return nil, err
		}
		if _, err := s.Append(session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}); err != nil {
			return nil, err
		}
		return map[string]any{"stopReason": "end_turn"}, nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

const fakeScenario = `
description: echo twice, restart, load, echo again
seed:
  - header: {id: seeded-parent, createdAt: 5, cwd: $CWD, delegationDepth: 0}
    events:
      - {type: turn/start, data: {turn: 1}}
      - {type: user/message, data: {id: m1, role: user, content: [{type: text, text: "Start a background job."}], source: {kind: user}}}
      - {type: turn/end, data: {turn: 1, reason: {kind: completed}}}
steps:
  - initialize
  - new_session
  - prompt: hello
  - prompt: {text: world, background: true}
  - await_prompt
  - wait: {turn_ended: 2, idle: true}
  - restart
  - initialize
  - load_session: main
  - prompt: after restart
  - load_session: seeded-parent
  - prompt: {text: to the seed, session: seeded-parent}
`

func TestRunnerOnFakeAgent(t *testing.T) {
	sc, err := Parse("fake.yaml", "fake", []byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	first, err := Record(t.Context(), sc, fakeFactory, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Record(t.Context(), sc, fakeFactory, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []byte
	}{{"wire", first.Wire, second.Wire}, {"sessions", first.Sessions, second.Sessions}, {"transcript", first.Transcript, second.Transcript}} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s differs between two runs:\n%s\n---\n%s", c.name, c.got, c.want)
		}
	}
	wire := string(first.Wire)
	for _, want := range []string{
		`{"client":{"id":1,"jsonrpc":"2.0","method":"initialize"`,
		`{"agent":{"id":1,"jsonrpc":"2.0","result":{"agentInfo":{"name":"fake","version":"0"},"protocolVersion":1}}}`,
		`"cwd":"$CWD"`,
		`{"scenario":"restart"}`,
		// After the restart the raw ids start again at 0; renumbering goes on.
		`{"client":{"id":5,"jsonrpc":"2.0","method":"initialize"`,
		`"text":"echo: world"`,
	} {
		if !strings.Contains(wire, want) {
			t.Errorf("wire lacks %s:\n%s", want, wire)
		}
	}
	for i, line := range strings.Split(strings.TrimSpace(wire), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("wire line %d is not JSON: %s", i+1, line)
		}
	}
	sessions := string(first.Sessions)
	if !strings.HasPrefix(sessions, `{"type":"session","version":0,"id":"`) || !strings.Contains(sessions, `"cwd":"$CWD"`) {
		t.Errorf("sessions recording:\n%s", sessions)
	}
	if strings.Contains(sessions, "echo: to the seed") == false || strings.Count(sessions, `{"type":"session"`) != 2 {
		t.Errorf("want both sessions, the seeded one continued:\n%s", sessions)
	}
	tr := string(first.Transcript)
	for _, want := range []string{"Scenario fake", "(main)", "agent: echo: after restart", "user: Start a background job.", "-> stop reason end_turn", "Subagent tree"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr)
		}
	}
}

func TestRunnerStepErrorsNameFileAndStep(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown session", "steps:\n  - initialize\n  - prompt: {text: hi, session: nope}\n", `fake.yaml:3: step 2 (prompt): unknown session reference "nope"`},
		{"await without prompt", "steps:\n  - initialize\n  - new_session\n  - await_prompt\n", "fake.yaml:4: step 3 (await_prompt): no prompt is outstanding"},
		{"agent error", "steps:\n  - initialize\n  - load_session: missing\n", `fake.yaml:3: step 2 (load_session): unknown session reference "missing"`},
		{"rpc error", "steps:\n  - initialize\n  - list_agents_via_ext\n", "step 2 (list_agents_via_ext): unknown session reference"},
		{"method not found", "steps:\n  - initialize\n  - new_session\n  - list_agents_via_ext\n", "fake.yaml:4: step 3 (list_agents_via_ext): _acp-agent/subagents/list answered error -32601"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse("fake.yaml", "fake", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Record(t.Context(), sc, fakeFactory, t.TempDir(), nil)
			var se *StepError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a StepError containing %q", err, tt.want)
			}
		})
	}
}

type refMap map[string]string

func (m refMap) resolve(ref string) (string, bool) { id, ok := m[ref]; return id, ok }

func TestWaitObservesStore(t *testing.T) {
	st := session.NewStore(&session.DeterministicSources{Epoch: Epoch})
	w := newWatcher()
	defer w.observe(st)()
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := refMap{MainRef: s.ID()}
	appendTurn := func(turn int) {
		for _, a := range []struct {
			typ  string
			data any
		}{
			{session.TypeTurnStart, session.TurnData{Turn: turn}},
			{session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}},
		} {
			if _, err := s.Append(a.typ, a.data); err != nil {
				t.Error(err)
			}
		}
	}
	appendTurn(1)
	cancelled, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("stop"))
	err = w.await(cancelled, refs, MainRef, Wait{TurnEnded: 2, Idle: true})
	if err == nil || !strings.Contains(err.Error(), "turn 2 not ended (ended: [1])") {
		t.Fatalf("got %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- w.await(t.Context(), refs, MainRef, Wait{TurnEnded: 2, Idle: true}) }()
	appendTurn(2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.await(cancelled, refs, "no such child", Wait{Idle: true}); err == nil || !strings.Contains(err.Error(), `session "no such child" not known yet`) {
		t.Fatalf("got %v", err)
	}
}
