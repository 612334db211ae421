package acp

// This file defines the workspace of a session as its tools see it
// (workspace.Resolver): the session's cwd, files and commands through the
// root session's client when it advertises fs / terminal (the local
// implementations from Options otherwise), and the permission gate.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

var _ workspace.Resolver = (*Server)(nil)

// maxDelegationWalk bounds the walk from a child to its root session (a
// corrupt parent chain must not loop).
const maxDelegationWalk = 64

// Env returns the workspace of session sessionID. A child (subagent)
// session gets its own cwd, its root session's client and the root's mode
// as its descriptor's permission mode bounds it (policy.ChildMode);
// its permission requests are shown on the root session. A session whose
// root is not bound to this connection (or after the client left) uses
// the local files and commands, and its permission requests are rejected.
func (s *Server) Env(ctx context.Context, sessionID string) (workspace.Env, error) {
	h, err := s.header(ctx, sessionID)
	if err != nil {
		return workspace.Env{}, err
	}
	g := &gate{s: s, requester: sessionID, root: sessionID, cwd: h.Cwd, rootCwd: h.Cwd}
	if h.Origin == session.OriginSubagent {
		root, err := s.rootOf(ctx, h)
		if err != nil {
			return workspace.Env{}, err
		}
		g.root, g.rootCwd = root.ID, root.Cwd
		if g.cwd == "" {
			g.cwd = root.Cwd
		}
		rec := s.childRecordOf(g.root, sessionID)
		g.child = &childIdentity{id: sessionID, label: rec.Label, depth: h.DelegationDepth,
			mode: rec.PermissionMode, scope: rec.PermissionScope}
	}
	roots := s.SessionRoots(ctx, g.root)
	env := workspace.Env{Cwd: g.cwd, Roots: roots, Files: s.opts.LocalFiles, Commands: s.opts.LocalCommands, Permissions: g}
	if s.opts.SandboxCommands != nil {
		// The root's project may turn the sandbox on (settings); the
		// session's additional roots are writable in it as its cwd is.
		sb := s.policyFor(g.root, g.rootCwd).Sandbox()
		if len(roots) > 0 {
			sb.WritablePaths = append(slices.Clone(sb.WritablePaths), roots...)
		}
		env.Commands = s.opts.SandboxCommands(sb)
		// The person's choice for the session (config_boolean.go).
		if rb := s.boundSession(g.root); rb != nil && !rb.readOnly {
			if on, ok := s.sandboxChoice(rb); ok {
				switch {
				case on && !sandboxed(env.Commands, g.cwd):
					enabled := true
					sb.Enabled = &enabled
					env.Commands = s.opts.SandboxCommands(sb)
				case !on && s.opts.UnsandboxedCommands != nil:
					env.Commands = s.opts.UnsandboxedCommands
				}
			}
		}
	}
	// Every command gets the root's environment without secrets.
	cmdEnv, unset := s.rootPolicies().CommandEnv(g.root, g.rootCwd)
	var local workspace.Commands
	if env.Commands != nil {
		// Recorded in the root's log (as a child's permission questions
		// are), so that loading the root finds its children's leftovers.
		local = &recordedCommands{s: s, session: g.root, requester: sessionID,
			inner: workspace.WithEnv(env.Commands, cmdEnv, unset)}
		env.Commands = local
	}
	b := s.boundSession(g.root)
	if b == nil || b.readOnly || !s.connected() {
		return env, nil
	}
	caps := s.ClientCapabilities()
	if caps.Fs.ReadTextFile || caps.Fs.WriteTextFile {
		env.Files = &clientFiles{s: s, session: g.root, read: caps.Fs.ReadTextFile, write: caps.Fs.WriteTextFile, local: s.opts.LocalFiles}
	}
	if caps.Terminal {
		env.Commands = workspace.WithEnv(&clientTerminal{s: s, session: g.root}, cmdEnv, unset)
		if local != nil && workspace.SandboxOf(local, g.cwd) != "" {
			// The editor's terminals are not sandboxed by us: sandboxed
			// commands run locally, only those the person let out of the
			// sandbox run in the editor.
			env.Commands = sandboxFirst{sandboxed: local, outside: env.Commands}
		}
	}
	return env, nil
}

// sandboxFirst runs commands in the local sandbox, and those asked to run
// outside it (Command.Unsandboxed) through the client's terminal.
type sandboxFirst struct{ sandboxed, outside workspace.Commands }

var _ workspace.Sandboxed = sandboxFirst{}

func (c sandboxFirst) Run(ctx context.Context, cmd workspace.Command, display func(session.ToolDisplay)) (workspace.CommandResult, error) {
	if cmd.Unsandboxed {
		return c.outside.Run(ctx, cmd, display)
	}
	return c.sandboxed.Run(ctx, cmd, display)
}

// KeepsProtected forwards the sandbox's protection of the protected paths.
func (c sandboxFirst) KeepsProtected(cwd string) bool {
	return workspace.SandboxKeepsProtected(c.sandboxed, cwd)
}

func (c sandboxFirst) DescribeSandbox(cwd string) string {
	return workspace.SandboxOf(c.sandboxed, cwd)
}

// connected reports whether the connection is up.
func (s *Server) connected() bool {
	done := s.connDone()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// header returns the header of a live or stored session.
func (s *Server) header(ctx context.Context, id string) (session.Header, error) {
	if sess, ok := s.opts.Sessions.Get(id); ok {
		return sess.Header(), nil
	}
	if s.opts.Stored == nil {
		return session.Header{}, errorf(CodeUnknownSession, "unknown session: %s", id)
	}
	h, _, err := s.opts.Stored.Inspect(ctx, id)
	if err != nil {
		return session.Header{}, fmt.Errorf("read session %s: %w", id, err)
	}
	return h, nil
}

// rootOf walks a child's parent chain up to its top-level session.
func (s *Server) rootOf(ctx context.Context, h session.Header) (session.Header, error) {
	for range maxDelegationWalk {
		if h.Origin != session.OriginSubagent || h.ParentSession == "" {
			return h, nil
		}
		p, err := s.header(ctx, h.ParentSession)
		if err != nil {
			return session.Header{}, fmt.Errorf("find the root of session %s: %w", h.ID, err)
		}
		h = p
	}
	return session.Header{}, fmt.Errorf("find the root of session %s: delegation chain longer than %d", h.ID, maxDelegationWalk)
}

// childRecord is what the gate reads of a child's descriptor (the
// subagent/descriptor payload, subagent.Descriptor): its delegation label
// and the permission mode its agent definition asked for, with who wrote
// that definition (policy.ChildMode).
type childRecord struct {
	Label           string `json:"label"`
	PermissionMode  string `json:"permissionMode"`
	PermissionScope string `json:"permissionScope"`
}

// unreadableChild is the record of a child whose log could not be read:
// never broader than default mode, so nothing runs unasked.
var unreadableChild = childRecord{PermissionMode: ModeDefault, PermissionScope: policy.GrantProject}

// childRecordOf returns the record of child id's own descriptor (the
// first one after its seed: a forked child's seed holds its parent's),
// cached per bound root once a descriptor was found (a one-shot child
// writes its own inside its first turn).
func (s *Server) childRecordOf(root, id string) childRecord {
	s.gate.mu.Lock()
	rec, ok := s.gate.children[root][id]
	s.gate.mu.Unlock()
	if ok {
		return rec
	}
	sess, ok := s.opts.Sessions.Get(id)
	if !ok {
		return childRecord{}
	}
	events, err := sess.Events()
	if err != nil {
		s.log.Warn("read a child's descriptor", "session_id", id, "err", err)
		return unreadableChild
	}
	if n := sess.Header().SeedLength; n > 0 && n <= len(events) {
		events = events[n:]
	}
	found := false
	for _, ev := range events {
		if ev.Type != session.TypeDescriptor {
			continue
		}
		found = true
		if err := json.Unmarshal(ev.Data, &rec); err != nil {
			s.log.Warn("read a child's descriptor", "session_id", id, "err", err)
			return unreadableChild
		}
		break
	}
	// Cached under a bound root only, so it goes with the root.
	if !found || s.boundSession(root) == nil {
		return rec
	}
	s.gate.mu.Lock()
	if s.gate.children == nil {
		s.gate.children = map[string]map[string]childRecord{}
	}
	if s.gate.children[root] == nil {
		s.gate.children[root] = map[string]childRecord{}
	}
	s.gate.children[root][id] = rec
	s.gate.mu.Unlock()
	return rec
}

// clientFiles reads and writes through the client's fs/* methods (so the
// editor's unsaved buffers are seen and edits land in the editor), each
// direction only when advertised, the local implementation otherwise.
type clientFiles struct {
	s           *Server
	session     string
	read, write bool
	local       workspace.Files
}

var _ workspace.Files = (*clientFiles)(nil)

var errNoLocalFiles = errors.New("no local file access is configured")

func (c *clientFiles) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	if !c.read {
		if c.local == nil {
			return "", errNoLocalFiles
		}
		return c.local.ReadTextFile(ctx, path, line, limit)
	}
	req := acpsdk.ReadTextFileRequest{SessionId: acpsdk.SessionId(c.session), Path: path}
	if line > 0 {
		req.Line = acpsdk.Ptr(line)
	}
	if limit > 0 {
		req.Limit = acpsdk.Ptr(limit)
	}
	if err := c.s.flushSession(ctx, c.session); err != nil {
		return "", err
	}
	resp, err := c.s.conn.ReadTextFile(ctx, req)
	if err != nil {
		return "", clientReadError(path, err)
	}
	return resp.Content, nil
}

func (c *clientFiles) WriteTextFile(ctx context.Context, path, content string) error {
	// ACP clients validating with the schema refuse an empty content, so
	// truncating a file to nothing is done locally.
	if !c.write || content == "" {
		if c.local == nil {
			return errNoLocalFiles
		}
		return c.local.WriteTextFile(ctx, path, content)
	}
	// The editor runs on this machine (it launched us on stdio) but may
	// not create missing parent directories; the local write would.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	if err := c.s.flushSession(ctx, c.session); err != nil {
		return err
	}
	_, err := c.s.conn.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{
		SessionId: acpsdk.SessionId(c.session), Path: path, Content: content,
	})
	if err != nil {
		return clientFileError("write", path, err)
	}
	return nil
}

var _ workspace.CheckedFiles = (*clientFiles)(nil)

// ReadChecked reads p as checked: locally through the checked open when
// the client does not read; through the editor (which opens by name)
// after re-resolving p, which narrows the window of a swap but cannot
// close it.
func (c *clientFiles) ReadChecked(ctx context.Context, p workspace.Path, line, limit int) (string, error) {
	if !c.read {
		if c.local == nil {
			return "", errNoLocalFiles
		}
		return workspace.ReadFile(ctx, c.local, p, line, limit)
	}
	if err := workspace.Recheck(p); err != nil {
		return "", err
	}
	return c.ReadTextFile(ctx, p.Abs, line, limit)
}

// WriteChecked writes p as checked (see ReadChecked).
func (c *clientFiles) WriteChecked(ctx context.Context, p workspace.Path, content string) error {
	if !c.write || content == "" {
		if c.local == nil {
			return errNoLocalFiles
		}
		return workspace.WriteFile(ctx, c.local, p, content)
	}
	if err := workspace.Recheck(p); err != nil {
		return err
	}
	return c.WriteTextFile(ctx, p.Abs, content)
}

// codeResourceNotFound is the JSON-RPC code clients answer for a missing
// file (ACP "resource not found").
const codeResourceNotFound = -32002

// clientFileError wraps a client's fs failure; a missing file also
// matches fs.ErrNotExist, as a local read would.
func clientFileError(op, path string, err error) error {
	var re *acpsdk.RequestError
	if errors.As(err, &re) && re.Code == codeResourceNotFound {
		return &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("%w (the editor: %v)", fs.ErrNotExist, err)}
	}
	return &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("the editor could not %s the file: %w", op, err)}
}

// clientReadError is clientFileError for a read, which also treats the
// client's failure as "does not exist" when the path does not exist here
// either, whatever code the client used: some clients (acpx) answer a
// missing file with -32603, and a write of a new file reads it first. The
// editor runs on this machine, so a file neither it nor we can find is
// missing, not broken; an unsaved buffer of a new file would have been read.
func clientReadError(path string, err error) error {
	var re *acpsdk.RequestError
	if errors.As(err, &re) && re.Code != codeResourceNotFound {
		if _, statErr := os.Lstat(path); errors.Is(statErr, fs.ErrNotExist) {
			return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (the editor: %v)", fs.ErrNotExist, err)}
		}
	}
	return clientFileError("read", path, err)
}

// flushSession waits until the updates queued for bound session id so far
// are on the wire, so a client request made for a tool call (fs/*,
// terminal/*, session/request_permission) never overtakes the tool_call
// it belongs to. An unbound id needs no flush.
func (s *Server) flushSession(ctx context.Context, id string) error {
	b := s.boundSession(id)
	if b == nil || b.em == nil {
		return nil
	}
	return s.flush(ctx, b)
}

// recordedCommands runs local commands with their marker recorded in the
// log of the root session, durably, before they start: after
// the agent died, the next load of the session kills what is left
// (killLeftovers).
type recordedCommands struct {
	s *Server
	// session is the root session whose log records the marker;
	// requester the session whose call runs the command.
	session, requester string
	inner              workspace.Commands
}

// DescribeSandbox forwards the sandbox of the wrapped Commands.
func (r *recordedCommands) DescribeSandbox(cwd string) string {
	return workspace.SandboxOf(r.inner, cwd)
}

// KeepsProtected forwards the sandbox's protection of the protected paths.
func (r *recordedCommands) KeepsProtected(cwd string) bool {
	return workspace.SandboxKeepsProtected(r.inner, cwd)
}

func (r *recordedCommands) Run(ctx context.Context, cmd workspace.Command, display func(session.ToolDisplay)) (workspace.CommandResult, error) {
	cmd.Marker = workspace.ProcessMarker(r.requester, cmd.CallID)
	cmd.Record = func(ctx context.Context, marker string) error {
		sess, ok := r.s.opts.Sessions.Get(r.session)
		if !ok {
			return nil // no live log (tools-only use): nothing to record in
		}
		ev, err := sess.Append(workspace.TypeProcess, workspace.ProcessData{Session: r.requester, CallID: cmd.CallID, Marker: marker}, session.Ignorable())
		if err != nil {
			return err
		}
		if r.s.opts.Durable != nil {
			return r.s.opts.Durable(ctx, r.session, ev.Seq)
		}
		return nil
	}
	return r.inner.Run(ctx, cmd, display)
}

// killLeftovers kills the processes of local commands recorded in the
// last turn of a session loaded from storage: the agent that ran them is
// gone (the session was not live here), so whatever still carries their
// markers is left over. Earlier turns ended, and their commands with them.
func (s *Server) killLeftovers(id string, events []session.Event) {
	if s.opts.KillLeftover == nil {
		return
	}
	var markers []string
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.Type == session.TypeTurnStart {
			break
		}
		if ev.Type != workspace.TypeProcess {
			continue
		}
		var d workspace.ProcessData
		if json.Unmarshal(ev.Data, &d) == nil && d.Marker != "" {
			markers = append(markers, d.Marker)
		}
	}
	if len(markers) == 0 {
		return
	}
	if n := s.opts.KillLeftover(markers...); n > 0 {
		s.log.Warn("killed processes left by an earlier run", "session_id", id, "processes", n)
	}
}
