package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/internal/syncbuf"
)

// The provider's key is read, used for the model call, and gone from the
// agent's /proc/PID/environ, which any process of the same user (an
// unsandboxed command) may read.
func TestProviderKeyNotInProcEnviron(t *testing.T) {
	const key = "sk-fake-0123456789-keep-me-secret"
	auth := make(chan string, 8)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Working\"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })

	for _, tc := range []struct {
		name, keyVar string
		args, env    []string
	}{
		{"--api-key-env", "FAKE_KEY", []string{"--api-key-env", "FAKE_KEY"}, nil},
		{"ACP_AGENT_API_KEY_ENV", "MY_KEY", nil, []string{"ACP_AGENT_API_KEY_ENV=MY_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			args := append([]string{"exec", "--data-dir", filepath.Join(root, "data"), "--cwd", root,
				"--model", "openai-compatible/fake", "--base-url", srv.URL}, tc.args...)
			cmd := exec.Command(os.Args[0], append(args, "Hello")...)
			cmd.Env = append(os.Environ(), beMain+"=1", tc.keyVar+"="+key, "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, "config"))
			cmd.Env = append(cmd.Env, tc.env...)
			var stderr syncbuf.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			select {
			case got := <-auth:
				if got != "Bearer "+key {
					t.Fatalf("the model call carried Authorization %q, want the key", got)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("no model call\nstderr: %s", stderr.String())
			}
			environ, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(environ, []byte(key)) {
				t.Fatalf("/proc/%d/environ holds the provider key", cmd.Process.Pid)
			}
			if !bytes.Contains(environ, []byte("HOME="+root)) {
				t.Fatalf("/proc/%d/environ lost the other variables", cmd.Process.Pid)
			}
		})
	}
}
