package external

// This file runs the external agent's process and its connection: the
// start under the reaper, the stdout reader that checks every line before
// the SDK sees it, the stderr tail, the hang watchdog and the stop.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
)

// maxLine bounds one line of the agent's stdout (the SDK's own limit).
const maxLine = 10 << 20

// stderrTail is how much of the agent's stderr a failure quotes.
const stderrTail = 2 << 10

// passedEnv are the variables every external agent gets besides the ones
// its definition names.
var passedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TERM"}

// proc is one running external agent and its connection.
type proc struct {
	// owner is the Child that started the process: its callbacks
	// (updates, requests, failure) go there.
	owner *Child
	sup   *local.Supervised
	conn  *acp.ClientSideConnection
	in    *os.File // our end of its stdin

	life       context.Context
	lifeCancel context.CancelFunc

	stderr *tail
	wg     sync.WaitGroup // reader, stderr reader, watchdog, prompts, terminals

	lastActive atomic.Int64 // unix nanos of its last line
	waiting    atomic.Int32 // requests of ours it has not answered
	busy       atomic.Int32 // requests of its that we are serving

	stopping atomic.Bool
	failOnce sync.Once
	failed   chan struct{}
	failErr  error

	caps acp.AgentCapabilities
	info *acp.Implementation

	terms terminals
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTail {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-stderrTail:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// commandPath is the executable of the definition's command: looked up
// in PATH when it names no directory, else taken relative to cwd.
func (c *Child) commandPath(cwd string) (string, error) {
	path := c.cmd.Command
	if !strings.ContainsRune(path, filepath.Separator) {
		lp, ok := lookPath(path, c.opts.Getenv("PATH"))
		if !ok {
			return "", failf(nil, "external agent %s: command %q is not found in PATH", c.cmd.Name, c.cmd.Command)
		}
		return lp, nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	return path, nil
}

// commandEnv is the command's environment: the variables always passed
// and the ones its definition names, never values from the definition.
func (c *Child) commandEnv() []string {
	env := make([]string, 0, len(passedEnv)+len(c.cmd.Env))
	for _, name := range append(append([]string(nil), passedEnv...), c.cmd.Env...) {
		if v := c.opts.Getenv(name); v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// startProc starts the command in cwd and initializes the connection.
func (c *Child) startProc(ctx context.Context, cwd string) (*proc, error) {
	path, err := c.commandPath(cwd)
	if err != nil {
		return nil, err
	}
	env := c.commandEnv()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	ec := &exec.Cmd{Path: path, Args: append([]string{c.cmd.Command}, c.cmd.Args...), Dir: cwd, Env: env,
		Stdin: inR, Stdout: outW, Stderr: errW}
	sup, err := local.StartSupervised(ec, c.opts.Running, c.opts.KillGrace)
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, failf(err, "external agent %s: could not start %s: %v", c.cmd.Name, c.cmd.Line(), err)
	}
	p := &proc{owner: c, sup: sup, in: inW, stderr: &tail{}, failed: make(chan struct{})}
	p.terms.byID = map[string]*terminal{}
	p.life, p.lifeCancel = context.WithCancel(context.Background())
	p.lastActive.Store(time.Now().UnixNano())
	sdkR, sdkW := io.Pipe()
	p.conn = acp.NewClientSideConnection(&client{p: p}, inW, sdkR)
	p.conn.SetLogger(c.log.With("external_agent", c.cmd.Name))
	p.wg.Add(3)
	go func() { defer p.wg.Done(); p.read(outR, sdkW) }()
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(p.stderr, errR)
		errR.Close()
	}()
	go func() { defer p.wg.Done(); p.watch() }()

	if err := c.initialize(ctx, p); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// initialize speaks ACP's initialize to the started process p, with the
// client capabilities this agent serves, and keeps what it answers.
func (c *Child) initialize(ctx context.Context, p *proc) error {
	ictx, cancel := context.WithTimeout(ctx, c.opts.InitTimeout)
	defer cancel()
	resp, err := p.call(ictx, func(ctx context.Context) (any, error) {
		return p.conn.Initialize(ctx, acp.InitializeRequest{
			ProtocolVersion: acp.ProtocolVersionNumber,
			ClientCapabilities: acp.ClientCapabilities{
				Fs:       acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
				Terminal: true,
			},
			ClientInfo: &acp.Implementation{Name: "acp-agent", Version: c.opts.ClientVersion},
		})
	}, "initialize")
	if err != nil {
		return err
	}
	ir := resp.(acp.InitializeResponse)
	if ir.ProtocolVersion != acp.ProtocolVersionNumber {
		return failf(nil, "external agent %s speaks ACP version %d; this agent speaks version %d", c.cmd.Name, ir.ProtocolVersion, acp.ProtocolVersionNumber)
	}
	p.caps, p.info = ir.AgentCapabilities, ir.AgentInfo
	return nil
}

// child is the Child the process works for now.
func (p *proc) child() *Child { return p.owner }

// lookPath finds name in the folders of pathList (the agent's PATH, which
// Options.Getenv gives: not necessarily this process's).
func lookPath(name, pathList string) (string, bool) {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never the current directory
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// call runs one request of ours to the agent, counted as outstanding for
// the watchdog, and explains its failure.
func (p *proc) call(ctx context.Context, do func(context.Context) (any, error), method string) (any, error) {
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	resp, err := do(ctx)
	if err != nil {
		return nil, p.explain(ctx, err, method)
	}
	return resp, nil
}

// explain turns a failed request into the cause the person is shown.
func (p *proc) explain(ctx context.Context, err error, method string) error {
	if cause := p.cause(); cause != nil {
		return cause
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err := failf(err, "external agent %s did not answer %s within %s", p.child().cmd.Name, method, p.child().opts.InitTimeout)
		p.fail(err)
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case <-p.sup.Done():
		// It died as it answered: the crash is the cause.
		return p.waitCause()
	case <-time.After(200 * time.Millisecond):
	}
	if cause := p.cause(); cause != nil {
		return cause
	}
	var re *acp.RequestError
	if errors.As(err, &re) {
		return failf(err, "external agent %s refused %s: %s", p.child().cmd.Name, method, requestErrorText(re))
	}
	return failf(err, "external agent %s: %s failed: %v", p.child().cmd.Name, method, err)
}

func requestErrorText(re *acp.RequestError) string {
	msg := fmt.Sprintf("%s (code %d)", re.Message, re.Code)
	if re.Data != nil {
		if b, err := json.Marshal(re.Data); err == nil && string(b) != "null" {
			msg += ": " + string(b)
		}
	}
	return msg
}

// cause is why the process failed, nil while it has not.
func (p *proc) cause() error {
	select {
	case <-p.failed:
		return p.failErr
	default:
		return nil
	}
}

// waitCause waits (briefly) for the reader to report how the process
// ended.
func (p *proc) waitCause() error {
	select {
	case <-p.failed:
		return p.failErr
	case <-time.After(2 * time.Second):
		return failf(nil, "external agent %s stopped answering", p.child().cmd.Name)
	}
}

// fail records why the agent failed (first cause wins), kills it and ends
// the child's turn with the cause.
func (p *proc) fail(err error) {
	p.failOnce.Do(func() {
		p.failErr = err
		close(p.failed)
		p.child().log.Warn("external agent failed", "agent", p.child().cmd.Name, "err", err)
		p.sup.Stop() // the reader then sees EOF
		p.child().procFailed(p, err)
	})
}

// read passes the agent's stdout to the SDK line by line. A line that is
// not JSON fails the agent (the SDK would skip it silently); a
// subagent_update, which the SDK cannot decode, is taken out here. At EOF
// it waits for the process and reports how it ended.
func (p *proc) read(out *os.File, sdk *io.PipeWriter) {
	defer out.Close()
	defer sdk.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		p.lastActive.Store(time.Now().UnixNano())
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			p.fail(failf(nil, "external agent %s wrote something that is not JSON-RPC on its stdout: %q", p.child().cmd.Name, clip(string(line), 120)))
			return
		}
		if bytes.Contains(line, []byte(`"subagent_update"`)) && p.child().nestedLine(line) {
			continue
		}
		buf := make([]byte, 0, len(line)+1)
		buf = append(append(buf, line...), '\n')
		if _, err := sdk.Write(buf); err != nil {
			return
		}
	}
	if err := sc.Err(); err != nil && !p.stopping.Load() {
		p.fail(failf(err, "external agent %s: reading its stdout failed: %v", p.child().cmd.Name, err))
		return
	}
	select {
	case <-p.sup.Done():
	case <-time.After(3 * time.Second):
		// It closed its stdout and lives on: it is of no use any more.
	}
	if p.stopping.Load() {
		return
	}
	how := "closed its stdout"
	select {
	case <-p.sup.Done():
		how = "exited (" + local.ExitDescription(p.sup.Err()) + ")"
	default:
	}
	msg := fmt.Sprintf("external agent %s %s", p.child().cmd.Name, how)
	if s := p.stderr.String(); s != "" {
		msg += "; the end of its stderr: " + clip(s, 400)
	}
	p.fail(failf(nil, "%s", msg))
}

// watch fails the agent when it stays silent for ReplyTimeout while a
// request of ours is outstanding and none of its is being served.
func (p *proc) watch() {
	limit := p.child().opts.ReplyTimeout
	tick := time.NewTicker(max(limit/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-p.life.Done():
			return
		case <-p.failed:
			return
		case <-tick.C:
		}
		if p.waiting.Load() == 0 || p.busy.Load() > 0 {
			continue
		}
		if time.Since(time.Unix(0, p.lastActive.Load())) > limit {
			p.fail(failf(nil, "external agent %s hung: nothing from it for %s while it owed an answer", p.child().cmd.Name, limit))
			return
		}
	}
}

// active marks a request of the agent's as being served (the watchdog
// does not count the time); the returned func ends it.
func (p *proc) active() func() {
	p.busy.Add(1)
	return func() {
		p.lastActive.Store(time.Now().UnixNano())
		p.busy.Add(-1)
	}
}

// stop ends the process and every goroutine of the connection: stdin is
// closed (a polite end), then the process tree is stopped.
func (p *proc) stop() {
	p.stopping.Store(true)
	p.lifeCancel()
	p.terms.killAll()
	p.in.Close()
	select {
	case <-p.sup.Done():
	case <-time.After(500 * time.Millisecond):
	}
	p.sup.Stop()
	p.wg.Wait()
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
