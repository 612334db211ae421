package scenarios

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model/scripted"
)

func TestEmbeddedScenariosParse(t *testing.T) {
	if _, err := loadAll(); err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		sc, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Model != nil {
			if _, err := scripted.Parse(sc.Model); err != nil {
				t.Errorf("%s: model section: %v", name, err)
			}
		}
		// The same file must be accepted as a script by --model script:PATH.
		data, err := fs.ReadFile(files, name+"/scenario.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Model != nil {
			if _, err := scripted.Parse(data); err != nil {
				t.Errorf("%s: whole file as a script: %v", name, err)
			}
		}
	}
	if _, err := Load("no-such-scenario"); !errors.Is(err, errUnknown) {
		t.Errorf("unknown scenario: got %v", err)
	}
}

func TestParseStepsAndShorthands(t *testing.T) {
	sc, err := Parse("x.yaml", "x", []byte(`
description: d
faults:
  child_published_run_error: run failed
  child_dispose_error: dispose failed
fences:
  - {session: child label, call: 1, until: {turn_ended: 2}}
steps:
  - initialize
  - new_session
  - new_session: other
  - load_session: seeded
  - prompt: hello
  - prompt: {text: bye, session: other, background: true}
  - await_prompt: other
  - cancel
  - wait: {child_settled: 2, parent_idle: true}
  - wait: {session: child label, model_call: 0}
  - restart
  - list_agents_via_ext: {scope: descendants}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Index: 1, Op: OpInitialize},
		{Index: 2, Op: OpNewSession, As: MainRef},
		{Index: 3, Op: OpNewSession, As: "other"},
		{Index: 4, Op: OpLoadSession, Session: "seeded"},
		{Index: 5, Op: OpPrompt, Session: MainRef, Text: "hello"},
		{Index: 6, Op: OpPrompt, Session: "other", Text: "bye", Background: true},
		{Index: 7, Op: OpAwaitPrompt, Session: "other"},
		{Index: 8, Op: OpCancel, Session: MainRef},
		{Index: 9, Op: OpWait, Session: MainRef},
		{Index: 10, Op: OpWait, Session: "child label"},
		{Index: 11, Op: OpRestart},
		{Index: 12, Op: OpListAgentsEx, Session: MainRef, Scope: "descendants"},
	}
	if len(sc.Steps) != len(want) {
		t.Fatalf("got %d steps, want %d", len(sc.Steps), len(want))
	}
	for i, w := range want {
		got := sc.Steps[i]
		got.Line, got.Wait = 0, nil
		if !reflect.DeepEqual(got, w) {
			t.Errorf("step %d: got %+v, want %+v", i+1, got, w)
		}
	}
	if w := sc.Steps[8].Wait; w == nil || w.ChildSettled != 2 || !w.Idle {
		t.Errorf("wait: %+v", w)
	}
	if w := sc.Steps[9].Wait; w == nil || w.ModelCall == nil || *w.ModelCall != 0 {
		t.Errorf("wait: %+v", w)
	}
	if sc.Faults != (Faults{ChildPublishedRunError: "run failed", ChildDisposeError: "dispose failed"}) {
		t.Errorf("faults: %+v", sc.Faults)
	}
	if len(sc.Fences) != 1 || sc.Fences[0].Key != "child label" || sc.Fences[0].Call != 1 || sc.Fences[0].UntilSession != MainRef || sc.Fences[0].Until.TurnEnded != 2 {
		t.Errorf("fences: %+v", sc.Fences)
	}
}

func TestParseErrorsNameFileLineAndStep(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"not yaml", "steps: [", "x.yaml: not valid YAML"},
		{"not a mapping", "- a\n", "x.yaml:1: the scenario must be a YAML mapping"},
		{"no steps", "description: d\n", "the scenario has no steps"},
		{"unknown key", "stepz: []\n", `x.yaml:1: unknown key "stepz"`},
		{"unknown op", "steps:\n  - initialize\n  - jump\n", `x.yaml:3: step 2 (jump): unknown operation "jump"`},
		{"empty prompt", "steps:\n  - prompt: \"\"\n", "x.yaml:2: step 1 (prompt): needs a non-empty text"},
		{"bad arg", "steps:\n  - prompt: {txt: a}\n", `x.yaml:2: step 1 (prompt): unknown key "txt"`},
		{"two ops", "steps:\n  - {initialize: null, restart: null}\n", "step 1: a step is one operation"},
		{"empty wait", "steps:\n  - wait: {session: main}\n", "step 1 (wait): a wait needs at least one condition"},
		{"bad wait value", "steps:\n  - wait: {turn_ended: soon}\n", "x.yaml:2: step 1 (wait).turn_ended: must be an integer"},
		{"bad scope", "steps:\n  - list_agents_via_ext: {scope: all}\n", `step 1 (list_agents_via_ext): scope must be "children" or "descendants"`},
		{"bad seed header", "seed:\n  - header: {id: a/b}\nsteps: [initialize]\n", "x.yaml:2: seed[0].header:"},
		{"seed without header", "seed:\n  - events: []\nsteps: [initialize]\n", "seed[0]: missing header"},
		{"bad seed event", "seed:\n  - header: {id: p}\n    events:\n      - {type: no/such}\nsteps: [initialize]\n", "x.yaml:4: seed[0].events[0]: session log record 0 has unsupported event type"},
		{"duplicate seed", "seed:\n  - header: {id: p}\n  - header: {id: p}\nsteps: [initialize]\n", `session "p" is seeded twice`},
		{"bad fault", "faults: {child_run: x}\nsteps: [initialize]\n", `x.yaml:1: faults: unknown key "child_run"`},
		{"fence without until", "fences:\n  - {session: c}\nsteps: [initialize]\n", "fences[0]: needs an until condition"},
		{"fence at nowhere", "fences:\n  - {session: c, at: turn, until: {idle: true}}\nsteps: [initialize]\n", `x.yaml:2: fences[0].at: unknown "turn" (want model_call or step)`},
		{"bad expect_error", "steps:\n  - prompt: {text: a, expect_error: maybe}\n", "step 1 (prompt).expect_error"},
		{"bad max_turns", "max_turns: 0\nsteps: [initialize]\n", "max_turns must be a positive number"},
		{"bad token_estimates", "token_estimates: {main: [1]}\nsteps: [initialize]\n", "token_estimates must map script keys"},
		{"model not mapping", "model: 3\nsteps: [initialize]\n", "model: must be a mapping"},
		{"one model", "models: [fast]\nsteps: [initialize]\n", "models: must be a list of at least two model names"},
		{"same model twice", "models: [fast, fast]\nsteps: [initialize]\n", "models: model names must be distinct"},
		{"set_model without model", "steps:\n  - set_model: {session: main}\n", "step 1 (set_model): needs the model to choose"},
		{"two documents", "steps: [initialize]\n---\nsteps: [initialize]\n", "more than one YAML document"},
		{"mcp not a list", "mcp_servers: demo\nsteps: [initialize]\n", "mcp_servers: must be a list"},
		{"mcp without name", "mcp_servers:\n  - {broken: true}\nsteps: [initialize]\n", "x.yaml:2: mcp_servers[0]: needs a name"},
		{"mcp bad key", "mcp_servers:\n  - {name: a, url: x}\nsteps: [initialize]\n", `mcp_servers[0]: unknown key "url"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", "x", []byte(tt.yaml))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// FuzzParseScenario: arbitrary bytes never panic the parser, and what it
// accepts is a scenario with steps. Run with
// go test ./scenarios -run '^$' -fuzz FuzzParseScenario -fuzztime 60s.
func FuzzParseScenario(f *testing.F) {
	paths, _ := fs.Glob(files, "*/scenario.yaml")
	for _, p := range paths {
		data, _ := fs.ReadFile(files, p)
		f.Add(data)
	}
	for _, s := range []string{
		"steps: [initialize]",
		"steps:\n  - prompt: {text: a, background: true}\n  - wait: {turn_ended: 1, idle: true}\n",
		"seed:\n  - header: {id: p, cwd: $CWD}\n    events:\n      - {type: turn/start, data: {turn: 1}}\nsteps: [restart]\n",
		"fences:\n  - {session: c, call: 0, until: {model_call: 1}}\nsteps: [initialize]\n",
		"a: &a [*a]",
		"steps: !!binary AAAA",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("fuzz.yaml", "fuzz", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if len(sc.Steps) == 0 {
			t.Fatal("accepted a scenario without steps")
		}
		for i, st := range sc.Steps {
			if st.Index != i+1 || st.Op == "" || (st.Op == OpWait && st.Wait == nil) {
				t.Fatalf("step %d malformed: %+v", i, st)
			}
		}
	})
}
