package scenarios_test

// Issue 50 part 2, "Replays that hold": a background child's settlement
// notice steered into the parent's running turn is recorded with its
// position (the model call that delivered it) and every replay delivers
// it there.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// noticeStep returns where the first subagent settlement notice of a
// JSONL session log (several logs concatenated) was delivered: "turn T
// step S", the step whose user messages carry it ("" when none was).
func noticeStep(t *testing.T, data []byte) string {
	t.Helper()
	var turn, step int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Turn   int `json:"turn"`
				Step   int `json:"step"`
				Source struct {
					Kind string `json:"kind"`
				} `json:"source"`
			} `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "step/start":
			turn, step = ev.Data.Turn, ev.Data.Step
		case "user/message":
			if ev.Data.Source.Kind == "subagent-settled" {
				return fmt.Sprintf("turn %d step %d", turn, step)
			}
		}
	}
	return ""
}

// recordedNoticeStep is noticeStep over the session files a recorded run
// left in its data directory.
func recordedNoticeStep(t *testing.T, dataDir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "sessions", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if at := noticeStep(t, data); at != "" {
			return at
		}
	}
	return ""
}

// TestRecordReplaySteeredNotice records, against a fake provider on
// 127.0.0.1, a root that starts a background child and then works
// through several tool steps; the child's notice is steered into that
// running turn. The recording pins the notice's position (fences at the
// child's last call and at the root's step), and 50 of 50 keyless
// replays deliver it in the recorded step with byte-identical goldens.
func TestRecordReplaySteeredNotice(t *testing.T) {
	root, cwd, dir, vars := recordDirs(t, map[string]string{"a.txt": "a\n"})
	glob := func(id string) providerReply {
		return providerReply{calls: []providerCall{{id, "glob", `{"pattern": "*.txt"}`}}}
	}
	p := newKeyedProvider(t, map[string][]providerReply{
		"ROOT:": {
			{calls: []providerCall{{"call_bg", "subagent", `{"description": "Background helper", "prompt": "BG-CHILD: say done"}`}}},
			glob("call_g1"), glob("call_g2"), glob("call_g3"), glob("call_g4"), glob("call_g5"),
			{text: "NOTED"},
		},
		"BG-CHILD:": {{text: "BG_DONE"}},
	})
	// The child answers once the root's second reply was served, and the
	// root's fourth reply waits for the child's answer: the notice lands
	// while the root's turn is still taking steps.
	rootSecond, childAnswered := make(chan struct{}), make(chan struct{})
	p.gates = map[gateKey]chan struct{}{{"BG-CHILD:", 0}: rootSecond, {"ROOT:", 3}: childAnswered}
	p.opens = map[gateKey]chan struct{}{{"ROOT:", 1}: rootSecond, {"BG-CHILD:", 0}: childAnswered}
	code, out, errOut := runCLI(t, vars, "exec", "--cwd", cwd, "--model", "openai-compatible/fake", "--base-url", p.srv.URL,
		"--api-key-env", "FAKE_KEY", "--record", dir, "ROOT: start a helper, then look around")
	if code != cli.ExitOK || out != "NOTED\n" {
		t.Fatalf("exec --record: exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
	recorded := recordedNoticeStep(t, vars[cli.EnvDataDir])
	if !strings.HasPrefix(recorded, "turn 1 step ") || recorded == "turn 1 step 1" {
		t.Fatalf("the recorded notice was not steered into the running turn: %q", recorded)
	}
	script, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"at: step", "session: Background helper", "step_reached:", "child_settled: 1"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scenario.yaml lacks %q:\n%s", want, script)
		}
	}
	keyless := map[string]string{"HOME": root}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir, "--update"); code != cli.ExitOK {
		t.Fatalf("test --update: exit %d\n%s%s", code, out, errOut)
	}
	sessions, err := os.ReadFile(filepath.Join(dir, scenarios.GoldenDir, "sessions.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if got := noticeStep(t, sessions); got != recorded {
		t.Fatalf("the replay delivered the notice at %q, the recorded run at %q\n%s", got, recorded, script)
	}
	for i := range 50 {
		if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir); code != cli.ExitOK {
			t.Fatalf("replay %d of 50: exit %d\n%s%s\n%s", i+1, code, out, errOut, script)
		}
	}
}

// recordScript records one exec run of the scripted model (the fake
// provider here) with --record, writing stdout to out, and returns the
// exit status, stderr and the recorded scenario.
func recordScript(t *testing.T, script string, out io.Writer, args ...string) (int, string, string, string) {
	t.Helper()
	root, cwd, dir, vars := recordDirs(t, map[string]string{"a.txt": "a\n"})
	path := filepath.Join(root, "provider.yaml")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	argv := append([]string{"exec", "--cwd", cwd, "--model", "script:" + path, "--record", dir}, args...)
	code := cli.Main(context.Background(), argv, strings.NewReader(""), out, &errOut, func(k string) string { return vars[k] }, scenarios.Command())
	data, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatalf("exec --record wrote no scenario (exit %d): %v\n%s", code, err, errOut.String())
	}
	return code, errOut.String(), dir, string(data)
}

// replayHolds replays dir keyless: --update writes its goldens, then n
// replays must equal them. It returns the transcript.
func replayHolds(t *testing.T, dir string, n int) string {
	t.Helper()
	keyless := map[string]string{"HOME": filepath.Dir(dir)}
	if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir, "--timeout", "1m", "--update"); code != cli.ExitOK {
		data, _ := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
		t.Logf("%s", data)
		t.Fatalf("test --update: exit %d\n%s%s", code, out, errOut)
	}
	for i := range n {
		if code, out, errOut := runCLI(t, keyless, "scenario", "test", "--dir", dir, "--timeout", "1m"); code != cli.ExitOK {
			t.Fatalf("replay %d of %d: exit %d\n%s%s", i+1, n, code, out, errOut)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, scenarios.GoldenDir, "transcript.golden"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// brokenAfter is a stdout whose reader goes away after n writes (exec
// ... | head): the run is cancelled there.
type brokenAfter struct {
	mu sync.Mutex
	n  int
}

func (w *brokenAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n <= 0 {
		return 0, errors.New("write |1: broken pipe")
	}
	w.n--
	return len(p), nil
}

// Recordings of runs that did not end well are written and replay as
// they happened: a failed prompt (the replay expects the error), a reply
// cut at its output limit, a turn stopped by --max-turns, and a
// cancelled turn (the replay cancels it at the recorded point).
func TestRecordReplayRunsThatEndedEarly(t *testing.T) {
	glob := `{tool_calls: [{id: call_g, name: glob, arguments: '{"pattern": "*.txt"}'}]}`
	for _, tc := range []struct {
		name, script string
		notInScript  string
		args         []string
		out          io.Writer
		code         int
		inScript     []string
		inTranscript []string
	}{{
		name:         "failed prompt",
		script:       "model:\n  main:\n    - " + glob + "\n    - {error: provider exploded}\n",
		code:         cli.ExitError,
		inScript:     []string{"expect_error: true", "error: provider exploded"},
		inTranscript: []string{"answered error", "provider exploded"},
	}, {
		name:         "max_tokens",
		script:       "model:\n  main:\n    - {text: cut short, finish: length}\n",
		code:         cli.ExitRefused,
		inScript:     []string{"finish: length"},
		inTranscript: []string{"stop reason max_tokens"},
	}, {
		name:         "max turns",
		script:       "model:\n  main:\n    - " + glob + "\n    - " + glob + "\n    - {text: never reached}\n",
		args:         []string{"--max-turns", "2"},
		code:         cli.ExitLimit,
		inScript:     []string{"max_turns: 2"},
		inTranscript: []string{"stop reason max_turn_requests"},
	}, {
		name:   "cancelled",
		script: "model:\n  main:\n    - " + glob + "\n    - {hang: true}\n",
		args:   []string{"--output", "jsonl"},
		// The write after the title (the glob call's update) fails: the
		// turn is cancelled during the glob step or the hanging call
		// after it.
		out:          &brokenAfter{n: 1},
		code:         cli.ExitRefused,
		inScript:     []string{"background: true", "cancel", "await_prompt"},
		inTranscript: []string{"stop reason cancelled"},
	}, {
		name:   "cancelled mid-reply",
		script: "model:\n  main:\n    - {text: 'thinking ', hang: true}\n",
		args:   []string{"--output", "jsonl"},
		// The write after the title (the reply's first words) fails:
		// the turn is cancelled while the call hangs.
		out:          &brokenAfter{n: 1},
		code:         cli.ExitRefused,
		inScript:     []string{"hang: true", "model_call: 0", "cancel"},
		notInScript:  "thinking",
		inTranscript: []string{"stop reason cancelled"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out == nil {
				out = io.Discard
			}
			code, errOut, dir, script := recordScript(t, tc.script, out, append(tc.args, "Look around")...)
			if code != tc.code {
				t.Fatalf("exec --record: exit %d, want %d\n%s", code, tc.code, errOut)
			}
			for _, want := range tc.inScript {
				if !strings.Contains(script, want) {
					t.Errorf("scenario.yaml lacks %q:\n%s", want, script)
				}
			}
			if tc.notInScript != "" && strings.Contains(script, tc.notInScript) {
				t.Errorf("scenario.yaml holds %q:\n%s", tc.notInScript, script)
			}
			transcript := replayHolds(t, dir, 10)
			for _, want := range tc.inTranscript {
				if !strings.Contains(transcript, want) {
					t.Errorf("replay transcript lacks %q:\n%s\nscenario:\n%s", want, transcript, script)
				}
			}
		})
	}
}

// compactionCalls lists, for the root session of a JSONL log (several
// logs concatenated: the root's first), the step of each automatic
// compaction ("turn T step S"), in order.
func compactionCalls(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	var turn, step int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.Contains(line, []byte(`"parentSession"`)) {
			break // the root's children follow it
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Turn    int    `json:"turn"`
				Step    int    `json:"step"`
				Trigger string `json:"trigger"`
				Outcome string `json:"outcome"`
			} `json:"data"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "step/start":
			turn, step = ev.Data.Turn, ev.Data.Step
		case "session/compaction":
			out = append(out, fmt.Sprintf("turn %d step %d: %s", turn, step, ev.Data.Outcome))
		}
	}
	return out
}

// TestRecordReplayCompactsWhereTheRunDid records runs with a growing
// context (reads of a large file) and picks the largest context window at
// which the real run still compacted: its estimate sat just over the
// threshold. The recording keeps the estimates the compaction decisions
// used, and the replay, whose own estimates differ (its system prompt and
// paths are not the real run's), compacts at exactly the same step.
func TestRecordReplayCompactsWhereTheRunDid(t *testing.T) {
	read := `{tool_calls: [{id: call_r, name: read, arguments: '{"path": "a.txt"}'}]}`
	script := "model:\n  main:\n"
	for range 6 {
		script += "    - " + read + "\n"
	}
	script += "    - {text: done}\n  main/compact:\n"
	for range 6 {
		script += "    - {text: '## Intent\\nread a.txt'}\n"
	}
	big := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit\n", 80)
	record := func(window int) (dir, rec string, at []string) {
		root, cwd, dir, vars := recordDirs(t, map[string]string{"a.txt": big})
		path := filepath.Join(root, "provider.yaml")
		if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		var errOut strings.Builder
		argv := []string{"exec", "--cwd", cwd, "--model", "script:" + path, "--context-window", fmt.Sprint(window), "--record", dir, "Read a.txt six times"}
		if code := cli.Main(context.Background(), argv, strings.NewReader(""), io.Discard, &errOut, func(k string) string { return vars[k] }); code != cli.ExitOK {
			t.Fatalf("exec --record --context-window %d: exit %d\n%s", window, code, errOut.String())
		}
		files, _ := filepath.Glob(filepath.Join(vars[cli.EnvDataDir], "sessions", "*.jsonl"))
		var all []byte
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, data...)
		}
		data, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return dir, string(data), compactionCalls(t, all)
	}
	// Bisect between a window at which the run compacts and one at which
	// it does not, down to 20 tokens: at the largest window that compacts
	// the run's estimate sat a few tokens over the threshold, at the
	// smallest that does not a few tokens under it.
	type run struct {
		window   int
		dir, rec string
		at       []string
	}
	take := func(window int) run {
		dir, rec, at := record(window)
		return run{window, dir, rec, at}
	}
	over, under := take(10000), take(100000)
	if len(over.at) == 0 || len(under.at) > 0 {
		t.Fatalf("the bounds do not bracket the threshold: %v at 10000, %v at 100000", over.at, under.at)
	}
	for under.window-over.window > 20 {
		if r := take((over.window + under.window) / 2); len(r.at) > 0 {
			over = r
		} else {
			under = r
		}
	}
	for _, r := range []run{over, under} {
		if !strings.Contains(r.rec, "token_estimates:") {
			t.Fatalf("scenario.yaml lacks the token estimates:\n%s", r.rec)
		}
		replayHolds(t, r.dir, 3)
		sessions, err := os.ReadFile(filepath.Join(r.dir, scenarios.GoldenDir, "sessions.golden"))
		if err != nil {
			t.Fatal(err)
		}
		if got := compactionCalls(t, sessions); !slices.Equal(got, r.at) {
			t.Fatalf("window %d: the replay compacted at %v, the recorded run at %v", r.window, got, r.at)
		}
		// Without the recorded estimates the replay decides on its own
		// (shown, not required: how far its prompt is from the run's
		// depends on the machine).
		stripped := regexp.MustCompile(`(?m)^token_estimates:\n(?:  .*\n)+`).ReplaceAllString(r.rec, "")
		if err := os.WriteFile(filepath.Join(r.dir, "scenario.yaml"), []byte(stripped), 0o644); err != nil {
			t.Fatal(err)
		}
		runCLI(t, map[string]string{"HOME": filepath.Dir(r.dir)}, "scenario", "test", "--dir", r.dir, "--update")
		own, _ := os.ReadFile(filepath.Join(r.dir, scenarios.GoldenDir, "sessions.golden"))
		t.Logf("window %d: the run compacted at %v, the replay at the same; with its own estimates the replay compacts at %v", r.window, r.at, compactionCalls(t, own))
	}
}
