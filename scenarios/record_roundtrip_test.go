package scenarios_test

// The round trip of issue 31: "acp-agent exec --record DIR" against a
// fake OpenAI-compatible provider on 127.0.0.1, then "acp-agent scenario
// test --dir DIR" replaying it keyless against goldens it wrote with
// --update; the recording holds no key; an altered golden fails with a
// readable diff and --update fixes it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/acp-agent/acp-agent/internal/syncbuf"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/scenarios"
)

const fakeKey = "sk-fake-roundtrip-0123456789"

// providerReply is one streamed answer of the fake provider.
type providerReply struct {
	text  string
	calls []providerCall
}

type providerCall struct{ id, name, args string }

type gateKey struct {
	marker string
	index  int
}

// keyedProvider answers /chat/completions by conversation: the first
// user message picks the script (a marker in it), the number of assistant
// messages already in the request picks the reply. Being stateless, it
// answers the same whatever order concurrent sessions call it in.
type keyedProvider struct {
	t       *testing.T
	srv     *httptest.Server
	scripts map[string][]providerReply
	// gates hold a reply (by marker and reply index) until the channel is
	// closed; opens closes a channel once a reply was served.
	gates map[gateKey]chan struct{}
	opens map[gateKey]chan struct{}
	// summary, when set, answers a request offering no tools (a
	// compaction's summary request).
	summary string
	// words streams a reply's text cut after each run of spaces, as the
	// scripted model replays it (a recording keeps each reply's text, not
	// how the provider chunked it), so a replay's chunks match.
	words bool

	mu    sync.Mutex
	auths []string
}

func newKeyedProvider(t *testing.T, scripts map[string][]providerReply) *keyedProvider {
	p := &keyedProvider{t: t, scripts: scripts}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *keyedProvider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.auths = append(p.auths, r.Header.Get("Authorization"))
	p.mu.Unlock()
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	first, assistants := "", 0
	for _, m := range body.Messages {
		switch {
		case m.Role == "user" && first == "":
			first = string(m.Content)
		case m.Role == "assistant":
			assistants++
		}
	}
	var replies []providerReply
	key := gateKey{index: assistants}
	for marker, list := range p.scripts {
		if strings.Contains(first, marker) {
			replies, key.marker = list, marker
		}
	}
	if len(body.Tools) == 0 && p.summary != "" {
		replies, assistants = []providerReply{{text: p.summary}}, 0
	}
	if g, ok := p.gates[key]; ok {
		select {
		case <-g:
		case <-r.Context().Done():
			return
		}
	}
	if o, ok := p.opens[key]; ok {
		defer close(o)
	}
	if assistants >= len(replies) {
		http.Error(w, `{"error":{"message":"no scripted reply","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	rep := replies[assistants]
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta any, finish string) {
		d, _ := json.Marshal(delta)
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", d, f)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, "")
	text := []string{rep.text}
	if p.words {
		text = regexp.MustCompile(`[^ \t\n]*[ \t\n]*`).FindAllString(rep.text, -1)
	}
	for _, t := range text {
		if t != "" {
			chunk(map[string]any{"content": t}, "")
		}
	}
	finish := "stop"
	for i, c := range rep.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]string{"name": c.name, "arguments": c.args}}}}, "")
		finish = "tool_calls"
	}
	chunk(map[string]any{}, finish)
	fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"fake\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":7,\"total_tokens\":127}}\n\ndata: [DONE]\n\n")
}

// runCLI runs acp-agent (with the scenario command, as cmd/acp-agent does).
func runCLI(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	// Synchronized: the ACP SDK's read goroutine may still log "connection
	// closed" to stderr while the recorder writes its notes there.
	var out, errOut syncbuf.Buffer
	code := cli.Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }, scenarios.Command())
	return code, out.String(), errOut.String()
}

// assistantTurns lists, in log order, what each assistant message of the
// session files under root said: its text and tool-call names. Ids,
// times and the system prompt (the replay's is the deterministic one) are
// left out.
func assistantTurns(t *testing.T, files []string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, assistantLines(t, data)...)
	}
	slices.Sort(out)
	return out
}

func assistantLines(t *testing.T, data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Message struct {
					Content []struct {
						Type, Text, Name string
					} `json:"content"`
				} `json:"message"`
			} `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "assistant/message" {
			continue
		}
		var parts []string
		for _, c := range ev.Data.Message.Content {
			parts = append(parts, c.Type+":"+c.Text+c.Name)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func TestRecordReplayRoundTrip(t *testing.T) {
	root, cwd, dir, vars := recordDirs(t, map[string]string{"notes.txt": "note one\nnote two\n"})
	p := newKeyedProvider(t, map[string][]providerReply{
		"ROOT:": {
			{calls: []providerCall{
				{"call_read", "read", `{"path": "notes.txt"}`},
				{"call_fg", "subagent", `{"description": "Count the notes", "prompt": "FG-CHILD: count the lines of notes.txt", "run_in_background": false}`},
			}},
			{text: "There are two notes. ROOT_DONE"},
		},
		"FG-CHILD:": {
			{calls: []providerCall{{"call_child_read", "read", `{"path": "notes.txt"}`}}},
			{text: "2 lines. CHILD_OK"},
		},
	})

	// Record against the provider, with its key.
	code, out, errOut := runCLI(t, vars, "exec", "--cwd", cwd, "--model", "openai-compatible/fake", "--base-url", p.srv.URL,
		"--api-key-env", "FAKE_KEY", "--ask", "allow", "--record", dir, "ROOT: review notes.txt with a helper")
	if code != cli.ExitOK || out != "There are two notes. ROOT_DONE\n" {
		t.Fatalf("exec --record: exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
	p.mu.Lock()
	if len(p.auths) != 4 || p.auths[0] != "Bearer "+fakeKey {
		t.Fatalf("the provider saw Authorization %q, want the fake key on 4 calls", p.auths)
	}
	p.mu.Unlock()

	// (b) No key and no Authorization header anywhere in the recording.
	checkNoSecrets := func() {
		t.Helper()
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, bad := range []string{fakeKey, "Authorization", "authorization"} {
				if bytes.Contains(data, []byte(bad)) {
					t.Errorf("%s contains %q", path, bad)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checkNoSecrets()
	script, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"main:", "Count the notes:", "call_fg", "notes.txt: |", "note two", "text: 'ROOT: review notes.txt with a helper'"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scenario.yaml lacks %q:\n%s", want, script)
		}
	}

	// (a) Replay keyless: no provider, no key variable.
	keyless := map[string]string{"HOME": root}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir); code == cli.ExitOK || !strings.Contains(errOut, "no golden") {
		t.Fatalf("test without goldens: exit %d, want a failure naming the missing goldens\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir, "--update"); code != cli.ExitOK {
		t.Fatalf("test --update: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir); code != cli.ExitOK || !strings.Contains(out, "ok ") {
		t.Fatalf("test: exit %d\n%s%s", code, out, errOut)
	}
	transcript, err := os.ReadFile(filepath.Join(dir, scenarios.GoldenDir, "transcript.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agent: There are two notes. ROOT_DONE", "agent: 2 lines. CHILD_OK", "note two", "turn 1 ended: completed"} {
		if !strings.Contains(string(transcript), want) {
			t.Errorf("replay transcript lacks %q:\n%s", want, transcript)
		}
	}
	if strings.Contains(string(transcript), "SCRIPT_MISMATCH") || strings.Contains(string(transcript), "no reply") {
		t.Errorf("the replay asked for a reply the recording lacks:\n%s", transcript)
	}
	if code, out, errOut := runCLI(t, keyless, "scenario", "run", "--dir", dir); code != cli.ExitOK || out != string(transcript) {
		t.Fatalf("scenario run --dir: exit %d, stdout is not the transcript golden\n%s%s", code, out, errOut)
	}
	// The replay's session logs say what the recorded ones say.
	recorded, _ := filepath.Glob(filepath.Join(vars[cli.EnvDataDir], "sessions", "*", "*.jsonl"))
	if len(recorded) == 0 {
		recorded, _ = filepath.Glob(filepath.Join(vars[cli.EnvDataDir], "sessions", "*.jsonl"))
	}
	if len(recorded) != 2 {
		t.Fatalf("recorded session files %q, want root and child", recorded)
	}
	replayed := filepath.Join(dir, scenarios.GoldenDir, "sessions.golden")
	if got, want := assistantTurns(t, []string{replayed}), assistantTurns(t, recorded); !slices.Equal(got, want) {
		t.Errorf("replayed assistant messages\n %q\ndiffer from the recorded ones\n %q", got, want)
	}
	checkNoSecrets()

	// (c) An altered golden fails with a readable diff; --update fixes it.
	golden := filepath.Join(dir, scenarios.GoldenDir, "transcript.golden")
	if err := os.WriteFile(golden, bytes.Replace(transcript, []byte("ROOT_DONE"), []byte("ROOT_CHANGED"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, keyless, "scenario", "test", "--dir", dir)
	if code != cli.ExitError {
		t.Fatalf("altered golden: exit %d, want 1\n%s", code, errOut)
	}
	for _, want := range []string{"differs from 1 golden(s): transcript", "--- " + golden, "+++ replay", "-    agent: There are two notes. ROOT_CHANGED", "+    agent: There are two notes. ROOT_DONE", "--update"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("diff lacks %q:\n%s", want, errOut)
		}
	}
	if code, _, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir, "--update"); code != cli.ExitOK {
		t.Fatalf("--update: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir); code != cli.ExitOK {
		t.Fatalf("after --update: exit %d\n%s", code, errOut)
	}
}

// A background child whose settlement notice starts a turn of its own:
// the recording fences the child's first call after the root's first
// turn, so the replay orders them the same way every time.
func TestRecordReplayBackgroundChild(t *testing.T) {
	root, cwd, dir, vars := recordDirs(t, nil)
	p := newKeyedProvider(t, map[string][]providerReply{
		"ROOT:": {
			{calls: []providerCall{{"call_bg", "subagent", `{"description": "Background helper", "prompt": "BG-CHILD: say done"}`}}},
			{text: "STARTED"},
			{text: "NOTED"},
		},
		"BG-CHILD:": {
			{calls: []providerCall{{"call_ls", "glob", `{"pattern": "*"}`}}},
			{text: "BG_DONE"},
		},
	})
	// The child's first reply waits until the root's first turn has
	// been answered, so the notice comes after that turn.
	served := make(chan struct{})
	p.gates = map[gateKey]chan struct{}{{"BG-CHILD:", 0}: served}
	p.opens = map[gateKey]chan struct{}{{"ROOT:", 1}: served}
	code, out, errOut := runCLI(t, vars, "exec", "--cwd", cwd, "--model", "openai-compatible/fake", "--base-url", p.srv.URL,
		"--api-key-env", "FAKE_KEY", "--record", dir, "ROOT: start a helper")
	if code != cli.ExitOK || out != "NOTED\n" {
		t.Fatalf("exec --record: exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
	script, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fences:", "session: Background helper", "turn_ended: 1", "child_settled: 1"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scenario.yaml lacks %q:\n%s", want, script)
		}
	}
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
	for _, want := range []string{"agent: STARTED", "agent: BG_DONE", "agent: NOTED", "turn 2 ended: completed"} {
		if !strings.Contains(string(transcript), want) {
			t.Errorf("replay transcript lacks %q:\n%s", want, transcript)
		}
	}
}

// TestRecordSnapshotsWhatSearchesFound: files a glob or grep call found
// are in the recorded workspace (no call argument names them), so the
// replay's searches find them again; a file no search found is not.
func TestRecordSnapshotsWhatSearchesFound(t *testing.T) {
	root, cwd, dir, vars := recordDirs(t, map[string]string{
		"a.md": "alpha\n", "docs/b.md": "beta\n", "src/x.go": "package x // needle\n", "other.txt": "nothing here\n",
	})
	p := newKeyedProvider(t, map[string][]providerReply{
		"ROOT:": {
			{calls: []providerCall{
				{"call_glob", "glob", `{"pattern": "**/*.md"}`},
				{"call_grep", "grep", `{"pattern": "needle"}`},
			}},
			{text: "FOUND"},
		},
	})
	code, out, errOut := runCLI(t, vars, "exec", "--cwd", cwd, "--model", "openai-compatible/fake", "--base-url", p.srv.URL,
		"--api-key-env", "FAKE_KEY", "--ask", "allow", "--record", dir, "ROOT: find things")
	if code != cli.ExitOK || out != "FOUND\n" {
		t.Fatalf("exec --record: exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
	script, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a.md: |", "docs/b.md: |", "src/x.go: |", "needle"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scenario.yaml lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(string(script), "other.txt") {
		t.Errorf("a file no search found was snapshotted:\n%s", script)
	}
	keyless := map[string]string{"HOME": root}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir, "--update"); code != cli.ExitOK {
		t.Fatalf("test --update: exit %d\n%s%s", code, out, errOut)
	}
	transcript, err := os.ReadFile(filepath.Join(dir, scenarios.GoldenDir, "transcript.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"docs/b.md", "src/x.go:1:package x // needle"} {
		if !strings.Contains(string(transcript), want) {
			t.Errorf("the replay's searches did not find %q:\n%s", want, transcript)
		}
	}
}

// recordDirs makes a recording's directories under a temporary root: the
// working directory holding files (slash-separated names), the recording
// directory to be, and the variables of a run with the fake key.
func recordDirs(t *testing.T, files map[string]string) (root, cwd, dir string, vars map[string]string) {
	t.Helper()
	root = t.TempDir()
	cwd, dir = filepath.Join(root, "work"), filepath.Join(root, "recorded")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		p := filepath.Join(cwd, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars = map[string]string{
		cli.EnvDataDir: filepath.Join(root, "data"), "HOME": root, "XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"FAKE_KEY": fakeKey,
	}
	return root, cwd, dir, vars
}
