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
	vs := flag.String("vs", "", "a second binary (a previous release) run in turn with -bin, run for run: prints the median of the ratios bin/vs")
	commands := flag.Int("commands", 50, "bash calls in the turn")
	command := flag.String("command", "true", "the command line of each call")
	runs := flag.Int("runs", 1, "turns to time, each in a fresh agent process; the median is printed")
	args := flag.String("args", "", "more flags for the agents, space-separated (for example --sandbox)")
	flag.Parse()
	extra = strings.Fields(*args)
	if *bin == "" || *commands < 0 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "drive: -bin is required; -commands >= 0, -runs >= 1")
		os.Exit(2)
	}
	bins := []string{*bin}
	if *vs != "" {
		bins = append(bins, *vs)
	}
	figures := make([]figures, len(bins))
	for range *runs {
		// In turn, so that a drift of the machine's speed touches both.
		for i, b := range bins {
			r, err := run(context.Background(), b, *commands, *command)
			if err != nil {
				fmt.Fprintln(os.Stderr, "drive:", err)
				os.Exit(1)
			}
			if *commands > 0 {
				figures[i].perCommand = append(figures[i].perCommand, r.turn/time.Duration(*commands))
			}
			figures[i].exit = append(figures[i].exit, r.exit)
		}
	}
	for i, b := range bins {
		fmt.Printf("bin=%s commands=%d runs=%d per-command-median=%s exit-median=%s\n",
			filepath.Base(b), *commands, *runs, median(figures[i].perCommand), median(figures[i].exit))
	}
	if *vs != "" {
		fmt.Printf("ratio %s/%s, median of run pairs: per-command=%.3f exit=%.3f\n", filepath.Base(*bin), filepath.Base(*vs),
			ratio(figures[0].perCommand, figures[1].perCommand), ratio(figures[0].exit, figures[1].exit))
	}
}

// extra are more flags for every agent started (-args).
var extra []string

// figures are one binary's runs.
type figures struct{ perCommand, exit []time.Duration }

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// ratio is the median of a[i]/b[i] (0 without runs).
func ratio(a, b []time.Duration) float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, float64(a[i])/float64(b[i]))
		}
	}
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	return r[len(r)/2]
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
	cmd := exec.Command(bin, append([]string{"--data-dir", filepath.Join(dir, "data"), "--model", "script:" + scriptPath, "--log-level", "error"}, extra...)...)
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
