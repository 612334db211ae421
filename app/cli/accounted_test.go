package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
)

// seedDelegated writes "parent", whose own log records the delegation of
// "kid" (a start tool's result naming it), and kid, a continuable child
// with its descriptor; kid's header is h (its parent and origin).
func seedDelegated(t *testing.T, dir string, kid session.Header) {
	t.Helper()
	p, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(&session.DeterministicSources{})
	detach := p.Attach(st)
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	parent, err := st.Create(session.Header{ID: "parent", CreatedAt: 1, Cwd: "/w"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(parent.Append(session.TypeTurnStart, session.TurnData{Turn: 1}))
	must(parent.Append(session.TypeUserMessage, session.Message{ID: "m1", Role: session.RoleUser, Content: []session.Block{session.Text("delegate")}, Source: session.Source{Kind: session.SourceUser}}))
	must(parent.Append(session.TypeStepStart, session.StepData{Turn: 1, Step: 1}))
	args := `{"description":"review","prompt":"go"}`
	must(parent.Append(session.TypeAssistantMessage, session.AssistantMessageData{Turn: 1, Step: 1, Message: session.Message{
		ID: "m2", Role: session.RoleAssistant, Content: []session.Block{{Type: session.BlockToolCall, ID: "call_1", Name: "subagent", Arguments: args}},
		Source: session.Source{Kind: session.SourceModel, Provider: "scripted", Model: "scripted"}}, Finish: "tool-calls"}))
	call, err := parent.Append(session.TypeToolCall, session.ToolCallData{Turn: 1, Step: 1, CallID: "call_1", Name: "subagent", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	must(parent.Append(session.TypeToolResult, session.ToolResultData{Turn: 1, Step: 1, Message: session.Message{
		ID: "m3", Role: session.RoleUser, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "call_1", Content: []session.Block{session.Text("started subagent kid")}}},
		Source: session.Source{Kind: session.SourceTool, CallID: "call_1"}}, Raw: delegation.ContinuableResult("kid")}, session.WithSources(call.Seq)))
	must(parent.Append(session.TypeStepEnd, session.StepData{Turn: 1, Step: 1}))
	must(parent.Append(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}))
	child, err := st.Create(kid, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(child.Append(session.TypeTurnStart, session.TurnData{Turn: 1}))
	must(child.Append(session.TypeDescriptor, &subagent.Descriptor{Version: 2, Mode: subagent.ModeContinuable, Provider: "spawn", Label: "review"}))
	must(child.Append(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}))
	for _, id := range []string{"parent", "kid"} {
		if err := st.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	detach()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEveryDelegatedChildAccountedFor: a child the parent's own log
// delegated to gets a row, with the reason, in `agents`, `agents
// --descendants` and the ACP extension whatever happened to its log, and
// `sessions` shows its file's row (or none when it is gone).
func TestEveryDelegatedChildAccountedFor(t *testing.T) {
	good := session.Header{ID: "kid", CreatedAt: 2, Cwd: "/w", ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1}
	replace := func(f func(path string) error) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if f != nil {
				if err := f(path); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	tests := []struct {
		name    string
		header  session.Header                  // kid's header as written
		damage  func(t *testing.T, path string) // then done to kid's log
		row     string                          // the agents row of kid
		ext     string                          // the extension's entry of kid
		session string                          // kid's sessions TITLE and PARENT columns; "" for no row
	}{
		{"intact", good, nil,
			"kid [continuable, inactive] — review",
			`{"kind":"child","id":"kid","mode":"continuable","label":"review","activity":"inactive","hasChildren":false}`,
			"|parent"},
		{"log is a directory", good, replace(func(p string) error { return os.Mkdir(p, 0o700) }),
			"kid [diagnostic: unavailable: directory, not a session file]",
			`{"kind":"diagnostic","id":"kid","reason":"unavailable","detail":"directory, not a session file"}`,
			"(unreadable)|directory, not a session file"},
		{"log is empty", good, func(t *testing.T, p string) { os.Truncate(p, 0) },
			"kid [diagnostic: unavailable: empty file, no header]",
			`{"kind":"diagnostic","id":"kid","reason":"unavailable","detail":"empty file, no header"}`,
			"(unreadable)|empty file, no header"},
		{"log is a FIFO", good, replace(func(p string) error { return syscall.Mkfifo(p, 0o600) }),
			"kid [diagnostic: unavailable: named pipe, not a session file]",
			`{"kind":"diagnostic","id":"kid","reason":"unavailable","detail":"named pipe, not a session file"}`,
			"(unreadable)|named pipe, not a session file"},
		{"log deleted", good, replace(nil),
			"kid [diagnostic: missing: its log does not exist]",
			`{"kind":"diagnostic","id":"kid","reason":"missing","detail":"its log does not exist"}`,
			""},
		{"names a missing parent", session.Header{ID: "kid", CreatedAt: 2, Cwd: "/w", ParentSession: "ghost", Origin: session.OriginSubagent, DelegationDepth: 1}, nil,
			"kid [diagnostic: corrupt: names a missing parent ghost]",
			`{"kind":"diagnostic","id":"kid","reason":"corrupt","detail":"names a missing parent ghost"}`,
			"|ghost"},
		{"names itself", session.Header{ID: "kid", CreatedAt: 2, Cwd: "/w", ParentSession: "kid", Origin: session.OriginSubagent, DelegationDepth: 1}, nil,
			"kid [diagnostic: corrupt: names itself as its parent]",
			`{"kind":"diagnostic","id":"kid","reason":"corrupt","detail":"names itself as its parent"}`,
			"(corrupt: names itself as its parent)|kid"},
		// Mode 000 is not here: the tests run as root, who reads it anyway;
		// an unreadable log goes the same way as the FIFO (Check's problem).
	}
	cols := regexp.MustCompile(`\s{2,}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			seedDelegated(t, dir, tt.header)
			if tt.damage != nil {
				tt.damage(t, filepath.Join(dir, "sessions", "kid.jsonl"))
			}
			for _, args := range [][]string{{"agents", "parent"}, {"agents", "--descendants", "parent"}} {
				code, out, errOut := runCLI(t, dir, args...)
				want := "parent\n  └─ " + tt.row + "\n"
				if code != ExitOK || out != want {
					t.Errorf("%v: exit %d (%s), output\n%s\nwant\n%s", args, code, errOut, out, want)
				}
			}
			a := newTestApp(t, dir, "model:\n  main:\n    - text: hi\n")
			defer a.Close()
			for _, scope := range []string{"children", "descendants"} {
				got, err := a.Extensions["_acp-agent/subagents/list"](t.Context(), json.RawMessage(`{"sessionId":"parent","scope":"`+scope+`"}`))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(got)
				want := `{"entries":[` + tt.ext + `]}`
				if scope == "descendants" {
					want = `{"entries":[` + strings.TrimSuffix(tt.ext, "}") + `,"parentId":"parent","depth":1}]}`
				}
				if string(b) != want {
					t.Errorf("extension (%s)\n%s\nwant\n%s", scope, b, want)
				}
			}
			a.Close()
			code, out, errOut := runCLI(t, dir, "sessions")
			if code != ExitOK {
				t.Fatalf("sessions: exit %d: %s", code, errOut)
			}
			got := ""
			for _, line := range strings.Split(out, "\n") {
				if f := cols.Split(line, -1); len(f) >= 2 && f[0] == "kid" {
					if len(f) == 4 { // no title: the column is blank
						got = "|" + f[3]
					} else {
						got = f[1] + "|" + f[len(f)-1]
					}
				}
			}
			if got != tt.session {
				t.Errorf("sessions row of kid = %q, want %q\n%s", got, tt.session, out)
			}
		})
	}
}

// writeChild writes a stored continuable subagent session with header h
// and its descriptor (label: its id).
func writeChild(t *testing.T, dir string, h session.Header) {
	t.Helper()
	p, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(&session.DeterministicSources{})
	detach := p.Attach(st)
	s, err := st.Create(h, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []struct {
		typ  string
		data any
	}{
		{session.TypeTurnStart, session.TurnData{Turn: 1}},
		{session.TypeDescriptor, &subagent.Descriptor{Version: 2, Mode: subagent.ModeContinuable, Provider: "spawn", Label: h.ID}},
		{session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}},
	} {
		if _, err := s.Append(ev.typ, ev.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Remove(h.ID); err != nil {
		t.Fatal(err)
	}
	detach()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestListingScopesAgreeOnChildNamingAnotherParent: "parent"'s log
// delegated to "kid", whose header names another parent "other". The
// children scope and the descendants scope of parent (agents, agents
// --descendants, the ACP extension's two scopes) give kid the same row,
// also when the walk reaches kid under other because other is parent's
// subagent too (it used to list kid healthy there and corrupt in the
// children scope).
func TestListingScopesAgreeOnChildNamingAnotherParent(t *testing.T) {
	kid := session.Header{ID: "kid", CreatedAt: 3, Cwd: "/w", ParentSession: "other", Origin: session.OriginSubagent, DelegationDepth: 2}
	tests := []struct {
		name  string
		other *session.Header // nil: no session other
		// children and descendants are the CLI listings of parent.
		children, descendants string
		// ext is kid's entry in the extension's children scope; desc its
		// position in the descendants scope.
		ext, desc string
	}{
		{
			name:  "other is parent's subagent",
			other: &session.Header{ID: "other", CreatedAt: 2, Cwd: "/w", ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1},
			children: "parent\n  └─ other [continuable, inactive, has children] — other\n" +
				"  └─ kid [diagnostic: corrupt: names another parent other (delegated by parent)]\n",
			descendants: "parent\n  └─ other [continuable, inactive, has children] — other\n" +
				"    └─ kid [diagnostic: corrupt: names another parent other (delegated by parent)]\n",
			ext:  `{"kind":"diagnostic","id":"kid","reason":"corrupt","detail":"names another parent other (delegated by parent)"}`,
			desc: `"parentId":"other","depth":2`,
		},
		{
			name:        "other is a top-level session",
			other:       &session.Header{ID: "other", CreatedAt: 2, Cwd: "/w"},
			children:    "parent\n  └─ kid [diagnostic: corrupt: names another parent other (delegated by parent)]\n",
			descendants: "parent\n  └─ kid [diagnostic: corrupt: names another parent other (delegated by parent)]\n",
			ext:         `{"kind":"diagnostic","id":"kid","reason":"corrupt","detail":"names another parent other (delegated by parent)"}`,
			desc:        `"parentId":"parent","depth":1`,
		},
		{
			name:        "other is missing",
			children:    "parent\n  └─ kid [diagnostic: corrupt: names a missing parent other]\n",
			descendants: "parent\n  └─ kid [diagnostic: corrupt: names a missing parent other]\n",
			ext:         `{"kind":"diagnostic","id":"kid","reason":"corrupt","detail":"names a missing parent other"}`,
			desc:        `"parentId":"parent","depth":1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			seedDelegated(t, dir, kid)
			if tt.other != nil {
				writeChild(t, dir, *tt.other)
			}
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"agents", "parent"}, tt.children},
				{[]string{"agents", "--descendants", "parent"}, tt.descendants},
			} {
				code, out, errOut := runCLI(t, dir, c.args...)
				if code != ExitOK || out != c.want {
					t.Errorf("%v: exit %d (%s), output\n%s\nwant\n%s", c.args, code, errOut, out, c.want)
				}
			}
			a := newTestApp(t, dir, "model:\n  main:\n    - text: hi\n")
			defer a.Close()
			entries := map[string]string{}
			for _, scope := range []string{"children", "descendants"} {
				got, err := a.Extensions["_acp-agent/subagents/list"](t.Context(), json.RawMessage(`{"sessionId":"parent","scope":"`+scope+`"}`))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(got)
				var res struct{ Entries []json.RawMessage }
				if err := json.Unmarshal(b, &res); err != nil {
					t.Fatal(err)
				}
				for _, e := range res.Entries {
					if strings.Contains(string(e), `"id":"kid"`) {
						entries[scope] = string(e)
					}
				}
			}
			if entries["children"] != tt.ext {
				t.Errorf("children scope: kid = %s, want %s", entries["children"], tt.ext)
			}
			if want := strings.TrimSuffix(tt.ext, "}") + "," + tt.desc + "}"; entries["descendants"] != want {
				t.Errorf("descendants scope: kid = %s, want %s", entries["descendants"], want)
			}
		})
	}
}
