package mcp

// This file defines the server configuration, Start, the Set of running
// servers and their shutdown.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Transport names how a server is reached.
type Transport string

// Transports.
const (
	TransportStdio Transport = "stdio"
	TransportHTTP  Transport = "http"
	TransportSSE   Transport = "sse"
)

// ServerConfig describes one MCP server.
type ServerConfig struct {
	// Name identifies the server to the user and prefixes its tools.
	Name      string
	Transport Transport
	// stdio: the command, its arguments, extra environment ("KEY=VALUE",
	// added to BaseEnv) and working directory.
	Command string
	Args    []string
	Env     []string
	Dir     string
	// BaseEnv is the environment the server starts from (the agent's
	// without its secrets, as commands get it); nil means this process's
	// whole environment.
	BaseEnv []string
	// http and sse: the endpoint and extra request headers.
	URL     string
	Headers map[string]string
}

// Defaults.
const (
	// DefaultStartTimeout bounds one server's start: process launch or
	// first HTTP exchange, the initialize handshake and the tool listing.
	// Generous, because stdio servers are often fetched by a package
	// runner on first use.
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopGrace is how long a stdio server may take to exit after
	// its stdin closed before it is sent SIGTERM (and later SIGKILL).
	DefaultStopGrace = 2 * time.Second
)

// Options configure Start.
type Options struct {
	// StartTimeout bounds each server's start; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace: see DefaultStopGrace; 0 means the default.
	StopGrace time.Duration
	// ClientName and ClientVersion are announced to servers.
	ClientName, ClientVersion string
	Logger                    *slog.Logger
	// Permissions gives the permission gate of the session a call
	// belongs to; every call passes it first (read-only tools as reads,
	// the others as KindOther). Nil refuses every call: an MCP tool never
	// runs ungated.
	Permissions workspace.Resolver
}

// Failure is a server that could not be started.
type Failure struct {
	Server string
	Err    error
}

func (f Failure) Error() string { return fmt.Sprintf("MCP server %q: %v", f.Server, f.Err) }

// Set is the running MCP servers of one session and their tools.
type Set struct {
	servers []*server
	tools   []tool.Tool

	closeOnce sync.Once
	closeErr  error
}

// server is one connected server.
type server struct {
	gates   workspace.Resolver
	name    string
	session *mcpsdk.ClientSession
	// closeIdle releases the HTTP transport's idle connections (nil for
	// stdio).
	closeIdle func()
	log       *slog.Logger
}

// Start connects every server in configs concurrently and lists their
// tools. Servers that fail (bad command, HTTP error, no initialize answer
// within the start timeout, duplicate name) are returned as failures, in
// configuration order; the Set holds the others. Cancelling ctx abandons
// the starts still in progress. The caller must Close the Set.
func Start(ctx context.Context, configs []ServerConfig, opts Options) (*Set, []Failure) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ClientName == "" {
		opts.ClientName = "acp-agent"
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: opts.ClientName, Version: opts.ClientVersion},
		&mcpsdk.ClientOptions{Logger: opts.Logger})

	type outcome struct {
		srv   *server
		tools []*mcpsdk.Tool
		err   error
	}
	outcomes := make([]outcome, len(configs))
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for i, cfg := range configs {
		if err := cfg.validate(); err != nil {
			outcomes[i].err = err
			continue
		}
		if seen[cfg.Name] {
			outcomes[i].err = errors.New("another server of this session has the same name")
			continue
		}
		seen[cfg.Name] = true
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
			defer cancel()
			srv, tools, err := connect(sctx, client, cfg, opts)
			if err != nil && sctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("no answer within %s: %w", opts.StartTimeout, err)
			}
			outcomes[i] = outcome{srv, tools, err}
		})
	}
	wg.Wait()

	set := &Set{}
	var failures []Failure
	names := map[string]bool{}
	for i, o := range outcomes {
		if o.err != nil {
			failures = append(failures, Failure{Server: configs[i].Name, Err: o.err})
			continue
		}
		set.servers = append(set.servers, o.srv)
		for _, rt := range o.tools {
			t := newRemoteTool(o.srv, rt, names)
			set.tools = append(set.tools, t)
		}
		o.srv.log.Info("mcp server started", "tools", len(o.tools))
	}
	return set, failures
}

func (c ServerConfig) validate() error {
	if strings.TrimSpace(c.Name) == "" {
		return errors.New("the server has no name")
	}
	switch c.Transport {
	case TransportStdio:
		if strings.TrimSpace(c.Command) == "" {
			return errors.New("no command given")
		}
	case TransportHTTP, TransportSSE:
		if strings.TrimSpace(c.URL) == "" {
			return errors.New("no URL given")
		}
	default:
		return fmt.Errorf("unsupported transport %q", c.Transport)
	}
	return nil
}

// connect starts one server and lists its tools; on failure everything it
// started is stopped again.
func connect(ctx context.Context, client *mcpsdk.Client, cfg ServerConfig, opts Options) (*server, []*mcpsdk.Tool, error) {
	srv := &server{name: cfg.Name, log: opts.Logger.With("mcp_server", cfg.Name), gates: opts.Permissions}
	var transport mcpsdk.Transport
	var stderr *tailWriter
	switch cfg.Transport {
	case TransportStdio:
		cmd := exec.Command(cfg.Command, cfg.Args...)
		cmd.Dir = cfg.Dir
		base := cfg.BaseEnv
		if base == nil {
			base = os.Environ()
		}
		cmd.Env = append(append([]string(nil), base...), cfg.Env...)
		stderr = &tailWriter{log: srv.log}
		cmd.Stderr = stderr
		transport = &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: opts.StopGrace}
	case TransportHTTP, TransportSSE:
		base := http.DefaultTransport.(*http.Transport).Clone()
		hc := &http.Client{Transport: headerTransport{base: base, headers: cfg.Headers}}
		srv.closeIdle = base.CloseIdleConnections
		if cfg.Transport == TransportHTTP {
			transport = &mcpsdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
		} else {
			// The SSE stream lives as long as the context of its GET:
			// that must be the server's life, not the start timeout.
			life, stop := context.WithCancel(context.Background())
			closeIdle := srv.closeIdle
			srv.closeIdle = func() { stop(); closeIdle() }
			transport = detached{inner: &mcpsdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: hc}, life: life, stop: stop}
		}
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if srv.closeIdle != nil {
			srv.closeIdle()
		}
		return nil, nil, withStderr(err, stderr)
	}
	srv.session = cs
	var tools []*mcpsdk.Tool
	if res := cs.InitializeResult(); res != nil && res.Capabilities != nil && res.Capabilities.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				srv.close()
				return nil, nil, withStderr(fmt.Errorf("list tools: %w", err), stderr)
			}
			tools = append(tools, t)
		}
	}
	return srv, tools, nil
}

// withStderr appends the end of a stdio server's stderr to err: it usually
// says why the server did not start.
func withStderr(err error, stderr *tailWriter) error {
	if stderr == nil {
		return err
	}
	if tail := stderr.tail(); tail != "" {
		return fmt.Errorf("%w (stderr: %s)", err, tail)
	}
	return err
}

// Tools returns the tools of every started server (model-facing names).
func (s *Set) Tools() []tool.Tool {
	if s == nil {
		return nil
	}
	return append([]tool.Tool(nil), s.tools...)
}

// Servers returns the names of the started servers, in configuration
// order.
func (s *Set) Servers() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.name
	}
	return out
}

// Close stops every server concurrently and waits until all are gone (a
// stdio server gets StopGrace to exit after its stdin closes, then SIGTERM,
// then SIGKILL). Calls still running fail. It is idempotent.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		errs := make([]error, len(s.servers))
		var wg sync.WaitGroup
		for i, srv := range s.servers {
			wg.Go(func() { errs[i] = srv.close() })
		}
		wg.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

func (srv *server) close() error {
	err := srv.session.Close()
	if srv.closeIdle != nil {
		srv.closeIdle()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		// A server killed or exiting non-zero on shutdown is not our
		// failure.
		srv.log.Debug("mcp server exited", "err", err)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("stop MCP server %q: %w", srv.name, err)
	}
	srv.log.Info("mcp server stopped")
	return nil
}

// detached connects inner under life instead of the start context, while
// still giving up (cancelling life) if the start context ends first.
type detached struct {
	inner mcpsdk.Transport
	life  context.Context
	stop  context.CancelFunc
}

func (d detached) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	release := context.AfterFunc(ctx, d.stop)
	defer release()
	return d.inner.Connect(d.life)
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tailWriter keeps the last bytes a stdio server wrote to stderr and logs
// them at debug level.
type tailWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

const stderrTail = 512

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log.Debug("mcp server stderr", "text", strings.TrimRight(string(p), "\n"))
	w.buf = append(w.buf, p...)
	if len(w.buf) > stderrTail {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-stderrTail:]...)
	}
	return len(p), nil
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(strings.Fields(string(w.buf)), " ")
}
