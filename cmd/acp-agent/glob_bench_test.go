package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/internal/benchtree"
)

// globScript is a model turn of one `glob` call and a closing answer,
// for a fresh session (as acp's BenchmarkGlobTurn500).
const globScript = "model:\n  main:\n" +
	"    - tool_calls:\n        - id: call_glob\n          name: glob\n          arguments: '{\"pattern\": \"" + benchtree.GlobPattern + "\"}'\n" +
	"    - text: done\n"

// BenchmarkBinaryGlobTurn500 measures, through a freshly built binary over
// its stdio (a jsonrpc2 client), session/prompt to its end_turn response
// for a scripted turn whose one `glob` returns 500 paths, a fresh session
// per iteration (created outside the timing): the same turn as acp's
// in-process BenchmarkGlobTurn500 with fsync=true. agent-cpu-ns/turn is
// the agent process's CPU time in those prompts (from /proc, in clock
// ticks: a mean over many turns), which tells its work from its waits.
//
//	go test ./cmd/acp-agent -run '^$' -bench BenchmarkBinaryGlobTurn500 -benchmem -count 3
func BenchmarkBinaryGlobTurn500(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "acp-agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(globScript), 0o600); err != nil {
		b.Fatal(err)
	}
	cwd := filepath.Join(dir, "project")
	if _, err := benchtree.Paths(cwd, 500); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--model", "script:"+script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var (
		mu    sync.Mutex
		shown int // lines of the last completed tool call's text
	)
	handler := jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method == "session/update" && req.Params != nil {
			var n struct {
				Update struct {
					Kind    string `json:"sessionUpdate"`
					Status  string `json:"status"`
					Content []struct {
						Content struct{ Text string } `json:"content"`
					} `json:"content"`
				} `json:"update"`
			}
			if json.Unmarshal(*req.Params, &n) == nil && n.Update.Kind == "tool_call_update" && n.Update.Status == "completed" && len(n.Update.Content) > 0 {
				mu.Lock()
				shown = strings.Count(n.Update.Content[0].Content.Text, "\n") + 1
				mu.Unlock()
			}
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "bench client supports no requests"}
	})
	conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(stdio{stdout, stdin}), handler)
	ctx := context.Background()
	call := func(method string, params, result any) {
		if err := conn.Call(ctx, method, params, result); err != nil {
			b.Fatalf("%s: %v\nstderr:\n%s", method, err, stderr.String())
		}
	}
	call("initialize", map[string]any{"protocolVersion": 1}, &struct{}{})
	var cpu time.Duration // the agent's CPU time in the timed prompts
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		var created struct {
			SessionID string `json:"sessionId"`
		}
		call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &created)
		mu.Lock()
		shown = 0
		mu.Unlock()
		before := cpuTime(b, cmd.Process.Pid)
		b.StartTimer()
		var res struct {
			StopReason string `json:"stopReason"`
		}
		call("session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "list the Go files"}}}, &res)
		b.StopTimer()
		cpu += cpuTime(b, cmd.Process.Pid) - before
		b.StartTimer()
		if res.StopReason != "end_turn" {
			b.Fatalf("stopReason = %q", res.StopReason)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "agent-cpu-ns/turn")
	// jsonrpc2 handles notifications in order before the response.
	mu.Lock()
	n := shown
	mu.Unlock()
	if n != 500 {
		b.Fatalf("the last turn showed %d paths, want 500", n)
	}
	conn.Close()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("acp-agent: %v\nstderr:\n%s", err, stderr.String())
	}
}

// cpuTime is the user and system CPU time of process pid so far, from
// /proc/<pid>/stat (utime and stime, in clock ticks of 10 ms: USER_HZ is
// 100 on Linux).
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	// After the parenthesised command: state is field 3, utime 14, stime 15.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
