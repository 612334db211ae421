package main

// Process tests of "acp-agent exec": the real process (this test binary
// as acp-agent) against a fake OpenAI-compatible provider on 127.0.0.1.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/acp-agent/acp-agent/internal/syncbuf"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangingProvider streams the start of an answer, then holds the
// response open until the request is abandoned; started yields once per
// request.
func hangingProvider(t *testing.T) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	started := make(chan struct{}, 8)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Working on it\"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv, started
}

// SIGINT during a turn cancels it like session/cancel: the provider's
// request is abandoned, the turn ends cancelled in the session log, the
// updates so far are on stdout, and the exit status is 3.
func TestExecSIGINTCancelsTheTurn(t *testing.T) {
	srv, started := hangingProvider(t)
	root := t.TempDir()
	data, cwd := filepath.Join(root, "data"), filepath.Join(root, "work")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "exec", "--data-dir", data, "--cwd", cwd, "--output", "jsonl",
		"--model", "openai-compatible/fake", "--base-url", srv.URL, "--api-key-env", "FAKE_KEY", "Take your time")
	cmd.Env = append(os.Environ(), beMain+"=1", "FAKE_KEY=sk-fake", "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, "config"))
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-started:
	case err := <-exited:
		t.Fatalf("exec exited before the model call: %v\nstderr: %s", err, stderr.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the model call never started\nstderr: %s", stderr.String())
	}
	// The signal goes once the streamed start of the answer is on stdout:
	// the provider having sent it does not mean the agent has shown it.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "agent_message_chunk"); {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the streamed chunk never reached stdout\nstderr: %s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("exec did not end after SIGINT\nstderr: %s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit = %v, want status 3\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "cancelled") {
		t.Errorf("stderr %q does not say the turn was cancelled", stderr.String())
	}
	// stdout: only JSON lines, with the chunk streamed before the signal.
	sawChunk := false
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var u struct {
			Update struct {
				Kind string `json:"sessionUpdate"`
			} `json:"update"`
		}
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		sawChunk = sawChunk || u.Update.Kind == "agent_message_chunk"
	}
	if !sawChunk {
		t.Errorf("no agent_message_chunk on stdout before the cancel")
	}
	// The session log records the turn's end as a cancellation.
	logs, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*.jsonl"))
	if len(logs) == 0 {
		logs, _ = filepath.Glob(filepath.Join(data, "sessions", "*.jsonl"))
	}
	if len(logs) != 1 {
		t.Fatalf("session logs %v, want one", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"type":"turn/end"`) || !strings.Contains(string(b), `"aborted"`) {
		t.Fatalf("the session log does not end the turn as aborted:\n%s", b)
	}
}
