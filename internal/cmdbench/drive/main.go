// Command drive times the agent's command path through a built binary:
// it starts BIN over its stdio (a jsonrpc2 client, independent of the
// agent's own SDK), opens a session in a fresh directory, runs one
// scripted turn of N sequential `bash` calls (each answered "allow once"
// when asked), then closes stdin and waits for the process to exit. It
// prints one line of figures: the turn's wall time per command and the
// time from stdin's close to the exit.
//
//	go build -o /tmp/acp-new ./cmd/acp-agent
//	go run ./internal/cmdbench/drive -bin /tmp/acp-new -commands 50 -runs 9
//
// Any build that takes --data-dir and --model script:PATH can be driven,
// so a previous release built from a clone is timed the same way. Run it
// under /usr/bin/time -v to see the whole process.
//
// Layer: a development tool; it imports no product package.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

func main() {
	bin := flag.String("bin", "", "the acp-agent binary to drive (required)")
	commands := flag.Int("commands", 50, "bash calls in the turn")
	command := flag.String("command", "true", "the command line of each call")
	runs := flag.Int("runs", 1, "turns to time, each in a fresh agent process; the median is printed")
	flag.Parse()
	if *bin == "" || *commands < 0 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "drive: -bin is required; -commands >= 0, -runs >= 1")
		os.Exit(2)
	}
	var perCommand, exit []time.Duration
	for range *runs {
		r, err := run(context.Background(), *bin, *commands, *command)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drive:", err)
			os.Exit(1)
		}
		if *commands > 0 {
			perCommand = append(perCommand, r.turn/time.Duration(*commands))
		}
		exit = append(exit, r.exit)
	}
	fmt.Printf("bin=%s commands=%d runs=%d per-command-median=%s exit-median=%s\n",
		filepath.Base(*bin), *commands, *runs, median(perCommand), median(exit))
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// result is one run's figures.
type result struct {
	turn time.Duration // session/prompt sent to its response
	exit time.Duration // stdin closed to the process reaped
}

// script is a turn of n sequential bash calls, then a closing answer.
func script(n int, command string) string {
	args, _ := json.Marshal(map[string]string{"command": command})
	quoted, _ := json.Marshal(string(args)) // a YAML double-quoted scalar is a JSON string
	var b strings.Builder
	b.WriteString("model:\n  main:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - tool_calls:\n        - id: call_%d\n          name: bash\n          arguments: %s\n", i, quoted)
	}
	b.WriteString("    - text: done\n")
	return b.String()
}

func run(ctx context.Context, bin string, n int, command string) (result, error) {
	dir, err := os.MkdirTemp("", "acp-drive-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	cwd := filepath.Join(dir, "project")
	scriptPath := filepath.Join(dir, "script.yaml")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		return result{}, err
	}
	if err := os.WriteFile(scriptPath, []byte(script(n, command)), 0o600); err != nil {
		return result{}, err
	}
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--model", "script:"+scriptPath, "--log-level", "error")
	// A home of its own: no user settings or rules of this machine's.
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	fail := func(err error) (result, error) {
		_ = cmd.Process.Kill()
		<-waited
		return result{}, err
	}

	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(rwc{stdout, stdin}), jsonrpc2.HandlerWithError(answer))
	var init json.RawMessage
	if err := conn.Call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, &init); err != nil {
		return fail(fmt.Errorf("initialize: %w", err))
	}
	var session struct {
		SessionID string `json:"sessionId"`
	}
	if err := conn.Call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &session); err != nil {
		return fail(fmt.Errorf("session/new: %w", err))
	}
	var prompt struct {
		StopReason string `json:"stopReason"`
	}
	began := time.Now()
	err = conn.Call(ctx, "session/prompt", map[string]any{
		"sessionId": session.SessionID,
		"prompt":    []any{map[string]any{"type": "text", "text": "run the commands"}},
	}, &prompt)
	turn := time.Since(began)
	if err != nil {
		return fail(fmt.Errorf("session/prompt: %w", err))
	}
	if prompt.StopReason != "end_turn" {
		return fail(fmt.Errorf("session/prompt ended with %q", prompt.StopReason))
	}
	closed := time.Now()
	_ = stdin.Close()
	werr := <-waited
	exit := time.Since(closed)
	_ = conn.Close()
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return result{}, werr
	}
	return result{turn: turn, exit: exit}, nil
}

// answer serves the agent's requests: a permission question gets its
// "allow once" option; notifications are ignored.
func answer(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Method != "session/request_permission" || req.Params == nil {
		if req.Notif {
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: req.Method}
	}
	var p struct {
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(*req.Params, &p); err != nil {
		return nil, err
	}
	for _, o := range p.Options {
		if o.Kind == "allow_once" {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}}, nil
		}
	}
	return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
}

// rwc joins the agent's stdout and stdin into one stream.
type rwc struct {
	io.ReadCloser
	io.WriteCloser
}

func (c rwc) Close() error {
	return errors.Join(c.ReadCloser.Close(), c.WriteCloser.Close())
}
