package scenarios_test

// The served round trip of issue 31: "acp-agent --record DIR" serving an
// editor's connection (a jsonrpc2 client over pipes) against a fake
// OpenAI-compatible provider on 127.0.0.1 and the demo MCP server, four
// prompts in one session (a foreground and a background child whose
// notice starts a turn of its own, an MCP tool, a manual compaction, a
// prompt after it); then "scenario test --dir" replays the
// directory keyless, and its session logs (every record of the root and
// both children) and its main session's session/update stream (every
// update, all fields) equal the served connection's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/scenarios"
)

// editor is the ACP client side of a served connection: it answers each
// permission question with allow-once and keeps every session/update.
type editor struct {
	conn *jsonrpc2.Conn

	mu      sync.Mutex
	updates []json.RawMessage
	asked   int
	changed chan struct{} // closed and replaced on every update
}

// waitText waits until the agent sent a text chunk containing text.
func (e *editor) waitText(t *testing.T, text string) {
	t.Helper()
	for {
		e.mu.Lock()
		seen := false
		for _, u := range e.updates {
			if bytes.Contains(u, []byte(`"agent_message_chunk"`)) && bytes.Contains(u, []byte(text)) {
				seen = true
			}
		}
		ch := e.changed
		e.mu.Unlock()
		if seen {
			return
		}
		<-ch
	}
}

type pipeRWC struct {
	io.Reader
	io.Writer
	close func() error
}

func (p pipeRWC) Close() error { return p.close() }

func (e *editor) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch {
	case req.Method == "session/update" && req.Params != nil:
		e.mu.Lock()
		e.updates = append(e.updates, append(json.RawMessage(nil), *req.Params...))
		close(e.changed)
		e.changed = make(chan struct{})
		e.mu.Unlock()
		return nil, nil
	case req.Method == "session/request_permission":
		e.mu.Lock()
		e.asked++
		e.mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-once"}}, nil
	case req.Notif:
		return nil, nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

func (e *editor) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	var out json.RawMessage
	if err := e.conn.Call(context.Background(), method, params, &out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

// wireOf is what the agent told the client about session id, in order:
// the agent's text (consecutive chunks joined), each tool call's start
// and its final status: what the served run must have said at all.
func wireOf(t *testing.T, updates []json.RawMessage, id string) []string {
	t.Helper()
	var out []string
	final := map[string]bool{}
	for _, raw := range updates {
		var u struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind       string          `json:"sessionUpdate"`
				Content    json.RawMessage `json:"content"`
				ToolCallID string          `json:"toolCallId"`
				Status     string          `json:"status"`
			} `json:"update"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			t.Fatal(err)
		}
		if u.SessionID != id {
			continue
		}
		switch up := u.Update; up.Kind {
		case "agent_message_chunk":
			var c struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(up.Content, &c)
			if n := len(out); n > 0 && strings.HasPrefix(out[n-1], "text:") {
				out[n-1] += c.Text
			} else {
				out = append(out, "text:"+c.Text)
			}
		case "tool_call":
			out = append(out, "call:"+up.ToolCallID)
		case "tool_call_update":
			if (up.Status == "completed" || up.Status == "failed") && !final[up.ToolCallID] {
				final[up.ToolCallID] = true
				out = append(out, "done:"+up.ToolCallID+":"+up.Status)
			}
		}
	}
	return out
}

// goldenWire reads the session/update params the replay's agent sent to
// its main session from wire.golden (its session id is the first
// session/new result's).
func goldenWire(t *testing.T, path string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line struct {
			Agent *struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"agent"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Agent != nil && line.Agent.Method == "session/update" {
			out = append(out, line.Agent.Params)
		}
	}
	return out
}

func TestServeRecordReplayRoundTrip(t *testing.T) {
	root, cwd, dir, vars := recordDirs(t, map[string]string{"notes.txt": "note one\nnote two\n"})
	// The recording runs under the deterministic ids and clock, as the
	// replay does, so both sides mint the same ids and times (and a
	// running child's digests are sent unthrottled on both).
	vars[cli.DeterministicEnv] = "1"
	// The model sees the real cwd (the system prompt's environment block)
	// and the token estimates count it; the replay pads its cwd to 159
	// bytes (scenarios' fixedLengthCwd), so the recording's is padded the
	// same way and the estimates agree without a normalisation.
	if pad := replayCwdLen - len(cwd); pad > 1 {
		padded := cwd + "_" + strings.Repeat("x", pad-1)
		if err := os.Rename(cwd, padded); err != nil {
			t.Fatal(err)
		}
		cwd = padded
	}
	mcpSrv, err := mcptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mcpSrv.Close() })
	const summary = "## State\nSUMMARY: two notes were counted and echoed."
	p := newKeyedProvider(t, map[string][]providerReply{
		"ROOT:": {
			{calls: []providerCall{
				{"call_read", "read", `{"path": "notes.txt"}`},
				{"call_fg", "subagent", `{"description": "Count the notes", "prompt": "FG-CHILD: count the lines of notes.txt", "run_in_background": false}`},
				{"call_bg", "subagent", `{"description": "Background helper", "prompt": "BG-CHILD: list the files", "run_in_background": true}`},
			}},
			{text: "There are two notes. ROOT_DONE"},
			{text: "The helper is done. NOTED"},
			{calls: []providerCall{{"call_echo", "mcp__demo__echo", `{"text": "hello"}`}}},
			{text: "The echo said hello. ECHO_DONE"},
		},
		"FG-CHILD:": {
			{calls: []providerCall{{"call_child_read", "read", `{"path": "notes.txt"}`}}},
			{text: "2 lines. CHILD_OK"},
		},
		"BG-CHILD:": {
			{calls: []providerCall{{"call_ls", "glob", `{"pattern": "*"}`}}},
			{text: "BG_DONE"},
		},
		"SUMMARY:": {
			{text: "Still two notes. AFTER_COMPACT"},
		},
	})
	p.summary = summary
	p.words = true
	// The background child's first reply waits until the root's first
	// turn was answered, so its notice starts a turn of its own.
	answered := make(chan struct{})
	p.gates = map[gateKey]chan struct{}{{"BG-CHILD:", 0}: answered}
	p.opens = map[gateKey]chan struct{}{{"ROOT:", 1}: answered}

	// Serve one editor connection with --record, in process, as the
	// binary does (cli.Main over pipes).
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := cli.Main(context.Background(), []string{"--model", "openai-compatible/fake", "--base-url", p.srv.URL,
			"--api-key-env", "FAKE_KEY", "--context-window", "16000", "--record", dir},
			toAgentR, fromAgentW, &stderr, func(k string) string { return vars[k] }, scenarios.Command())
		fromAgentW.Close()
		exited <- code
	}()
	ed := &editor{changed: make(chan struct{})}
	ed.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(pipeRWC{fromAgentR, toAgentW, toAgentW.Close}), jsonrpc2.HandlerWithError(ed.handle))
	ed.call(t, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false}})
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(ed.call(t, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{
		map[string]any{"type": "http", "name": "demo", "url": mcpSrv.URL + "/demo", "headers": []any{}},
	}}), &created); err != nil {
		t.Fatal(err)
	}
	prompts := []string{"ROOT: review notes.txt with a helper", "Echo hello with the demo tool.", "/compact keep the count", "SUMMARY: and now?"}
	for i, text := range prompts {
		if i == 1 {
			// The editor's person reads the notice's turn before
			// typing on (the prompt would queue after it anyway).
			ed.waitText(t, "NOTED")
		}
		var res struct {
			StopReason string `json:"stopReason"`
		}
		raw := ed.call(t, "session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}})
		if err := json.Unmarshal(raw, &res); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("prompt %q answered %s", text, raw)
		}
	}
	// The editor closes the connection: the agent shuts down and writes
	// the recording.
	ed.conn.Close()
	if code := <-exited; code != cli.ExitOK {
		t.Fatalf("serving exited %d\n%s", code, stderr.String())
	}
	ed.mu.Lock()
	served := wireOf(t, ed.updates, created.SessionID)
	servedUpdates := slices.Clone(ed.updates)
	ed.mu.Unlock()
	for _, want := range []string{"text:There are two notes. ROOT_DONE", "The helper is done. NOTED", "done:call_echo:completed", "done:compaction-", "Still two notes. AFTER_COMPACT"} {
		if !strings.Contains(strings.Join(served, "\n"), want) {
			t.Fatalf("the served wire lacks %q: %q\nstderr: %s", want, served, stderr.String())
		}
	}

	// The scenario was renamed into place: no temporary file is left.
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 || entries[0].Name() != "scenario.yaml" {
		t.Fatalf("the recording directory holds %v (%v), want scenario.yaml only", entries, err)
	}

	// No key and no Authorization header anywhere in the recording.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, bad := range []string{fakeKey, "Authorization", "authorization", mcpSrv.URL} {
			if bytes.Contains(data, []byte(bad)) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--record (serving)", "mcp_servers:", "name: demo", "main/compact:", "SUMMARY: two notes", "Count the notes:", "Background helper:", "fences:", "turn_ended: 2", "child_settled: 1", "mcp__demo__echo",
		"text: 'ROOT: review notes.txt with a helper'", "text: /compact keep the count", "context_window: 16000", "notes.txt: |"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scenario.yaml lacks %q:\n%s", want, script)
		}
	}
	if i, j := strings.Index(string(script), "Echo hello"), strings.Index(string(script), "/compact keep"); i < 0 || j < i {
		t.Errorf("scenario.yaml does not hold the prompts in order:\n%s", script)
	}

	// Replay keyless: no provider, no key, no MCP server of ours.
	keyless := map[string]string{"HOME": root}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir, "--update"); code != cli.ExitOK {
		t.Fatalf("test --update: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir); code != cli.ExitOK {
		t.Fatalf("test: exit %d\n%s%s", code, out, errOut)
	}
	transcript, err := os.ReadFile(filepath.Join(dir, scenarios.GoldenDir, "transcript.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(transcript, []byte("SCRIPT_MISMATCH")) || bytes.Contains(transcript, []byte("no reply")) || bytes.Contains(transcript, []byte("not recorded")) {
		t.Errorf("the replay asked for a reply the recording lacks:\n%s", transcript)
	}
	for _, want := range []string{"compaction (manual) completed", "agent: BG_DONE", "turn 5 ended: completed"} {
		if !strings.Contains(string(transcript), want) {
			t.Errorf("replay transcript lacks %q:\n%s", want, transcript)
		}
	}

	// The replay's session logs say what the served ones say.
	recorded, _ := filepath.Glob(filepath.Join(vars[cli.EnvDataDir], "sessions", "*.jsonl"))
	nested, _ := filepath.Glob(filepath.Join(vars[cli.EnvDataDir], "sessions", "*", "*.jsonl"))
	recorded = append(recorded, nested...)
	if len(recorded) != 3 {
		t.Fatalf("recorded session files %q, want root and two children", recorded)
	}
	replayedLogs := sessionLogs(t, filepath.Join(dir, scenarios.GoldenDir, "sessions.golden"), "")
	if len(replayedLogs) != 3 {
		t.Fatalf("the replay logged %d sessions, want root and two children", len(replayedLogs))
	}
	for _, f := range recorded {
		for id, want := range sessionLogs(t, f, cwd) {
			if got, ok := replayedLogs[id]; !ok {
				t.Errorf("the replay has no session %s", id)
			} else if d := firstDiff(got, want); d != "" {
				t.Errorf("session %s: the replay's log differs from the recorded one: %s", id, d)
			}
		}
	}
	// And its wire tells the client what the served one told the editor.
	updates := goldenWire(t, filepath.Join(dir, scenarios.GoldenDir, "wire.golden"))
	var first struct {
		SessionID string `json:"sessionId"`
	}
	if len(updates) == 0 || json.Unmarshal(updates[0], &first) != nil {
		t.Fatal("no session/update in the replay's wire")
	}
	if first.SessionID != created.SessionID {
		t.Fatalf("the replay's session is %s, the recording's %s", first.SessionID, created.SessionID)
	}
	// Every session/update of the main session, all fields.
	if d := firstDiff(mainUpdates(t, updates, first.SessionID, ""), mainUpdates(t, servedUpdates, created.SessionID, cwd)); d != "" {
		t.Errorf("the replay's session/update stream differs from the served one: %s", d)
	}
}

// replayCwdLen is the length of a replay's working directory path (the
// scenario runner pads it to a constant, see fixedLengthCwd).
const replayCwdLen = 159

// canonical re-encodes one JSON value with sorted keys, the recording's
// workspace path written as the goldens write it ($CWD: the replay runs
// in a copy of the workspace elsewhere), and without the provider and
// model names: the replay runs the scripted model, which names neither
// (model/message sources and a child's descriptor carry them).
func canonical(t *testing.T, raw []byte, cwd string) string {
	t.Helper()
	if cwd != "" {
		raw = bytes.ReplaceAll(raw, []byte(cwd), []byte(scenarios.CwdPlaceholder))
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["kind"] == "model" {
				delete(v, "provider")
				delete(v, "model")
			}
			delete(v, "agentProvider")
			delete(v, "agentModel")
			for _, e := range v {
				strip(e)
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// mainUpdates is every session/update of session id, canonical.
func mainUpdates(t *testing.T, updates []json.RawMessage, id, cwd string) []string {
	t.Helper()
	var out []string
	for _, raw := range updates {
		var u struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			t.Fatal(err)
		}
		if u.SessionID == id {
			out = append(out, canonical(t, raw, cwd))
		}
	}
	return out
}

// sessionLogs reads a file of session logs (a log, or sessions.golden's
// logs one after the other), each starting at its "session" header, into
// canonical records by session id.
func sessionLogs(t *testing.T, path, cwd string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	id := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var h struct{ Type, ID string }
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Type == "session" {
			id = h.ID
		}
		out[id] = append(out[id], canonical(t, sc.Bytes(), cwd))
	}
	return out
}

// firstDiff says where two record lists first differ ("" when equal).
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("record %d:\n replay:   %s\n recorded: %s", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("the replay has %d records, the recording %d", len(got), len(want))
	}
	return ""
}

// TestServeRecordRefusals: --record DIR that is a file is a usage error
// before anything is served; a connection that created no session
// writes nothing and says so.
func TestServeRecordRefusals(t *testing.T) {
	_, _, dir, vars := recordDirs(t, nil)
	file := filepath.Join(filepath.Dir(dir), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		code      int
		stderr    string
	}{
		{name: "a file", dir: file, code: cli.ExitUsage, stderr: "not a directory"},
		{name: "no session", dir: dir, code: cli.ExitOK, stderr: "no session was created on the connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, vars, "--record", tc.dir)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, want %d and %q on stderr\n%s", code, out, tc.code, tc.stderr, errOut)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s was created (%v)", dir, err)
			}
		})
	}
}
