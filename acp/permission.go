package acp

// This file defines the permission gate: workspace.Permissions for one
// session. It gathers what the decision needs (the root session's mode,
// the settings rules over the path as written and as resolved, the
// answers remembered with "always", the path's class), asks package
// agent/policy, and renders its verdict: a refusal for the model, or a
// session/request_permission on the root session's client. The decision
// itself, and the matrix it implements, live in agent/policy (Decide).
// Remembered answers belong to the requester (a child's are its own) and
// are kept under its root, dropped with it.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Permission option ids offered in every session/request_permission: each
// equals its kind, since some clients (avante.nvim) pick the option to
// answer by matching ids against the kind names.
const (
	OptionAllowOnce    = "allow_once"
	OptionAllowAlways  = "allow_always"
	OptionRejectOnce   = "reject_once"
	OptionRejectAlways = "reject_always"
)

// legacyOptions maps the ids offered before they equalled their kind
// ("allow-once", …) to today's: a client that remembered them, or a
// recorded scenario, still answers with them.
var legacyOptions = map[string]string{
	"allow-once":    OptionAllowOnce,
	"allow-always":  OptionAllowAlways,
	"reject-once":   OptionRejectOnce,
	"reject-always": OptionRejectAlways,
}

// canonicalOption is the option id answered, with a legacy id mapped to
// today's.
func canonicalOption(id string) string {
	if c, ok := legacyOptions[id]; ok {
		return c
	}
	return id
}

// childIdentity names the child session behind a permission request.
type childIdentity struct {
	id    string
	label string
	depth int
	// mode is the permission mode its descriptor records ("" follows the
	// root's) and scope who granted it (policy.ChildMode).
	mode, scope string
}

// gate is the permission gate of one session (the requester). root is the
// top-level session whose client is asked and whose mode applies.
type gate struct {
	s         *Server
	requester string
	root      string
	cwd       string
	// rootCwd is the root session's cwd: its settings apply to children.
	rootCwd string
	child   *childIdentity // nil when the requester is the root itself
	// realDirs: cwd and rootCwd with symlinks resolved, once (realDirs).
	realOnce             sync.Once
	realCwd, realRootCwd string
}

var _ workspace.Permissions = (*gate)(nil)

// Authorize decides req with the policy package, asking the user when it
// says so, and renders a refusal for the model.
func (g *gate) Authorize(ctx context.Context, req workspace.PermissionRequest) error {
	mode := ModeDefault
	b := g.s.boundSession(g.root)
	if b != nil && !b.readOnly {
		mode = g.s.modeOf(b)
	}
	own := false // the child's own mode decides, not the root's
	if c := g.child; c != nil && c.mode != "" {
		m := string(policy.ChildMode(policy.Mode(mode), policy.Mode(c.mode), c.scope))
		own, mode = m != mode, m
	}
	req = g.protect(req)
	in := policy.Input{
		Mode: policy.Mode(mode), Kind: req.Kind, Class: classOf(req),
		Sandboxed: req.Sandboxed, SandboxKeepsProtected: req.SandboxKeepsProtected,
	}
	var ruleNote string
	in.Rule, in.RuleText, ruleNote = g.ruleDecision(req)
	if allow, ok := g.s.remembered(g.root, g.requester, alwaysKey(req)); ok {
		in.Remembered = policy.RememberedReject
		if allow {
			in.Remembered = policy.RememberedAllow
		}
	}
	v := policy.Decide(in)
	switch {
	case v.Action == policy.Allow:
		return nil
	case v.Action == policy.Ask:
		return g.ask(ctx, b, req)
	case v.Code == policy.CodeRuleDenies:
		if ruleNote != "" {
			ruleNote = " (" + ruleNote + ")"
		}
		return &tool.Error{Code: workspace.CodeRuleDenies, Message: fmt.Sprintf(
			"%s is denied by the settings rule %q%s. Do not retry it; ask the user how to proceed.", describeCall(req), in.RuleText, ruleNote)}
	case v.Code == policy.CodeModeForbids && own:
		return &tool.Error{Code: workspace.CodeModeForbids, Message: fmt.Sprintf(
			"this subagent runs in plan mode (its agent definition asks for it), which allows read-only tools only: %s was not run. "+
				"Describe the change in your answer instead.", describeRefused(req))}
	case v.Code == policy.CodeModeForbids:
		return &tool.Error{Code: workspace.CodeModeForbids, Message: fmt.Sprintf(
			"the session is in plan mode, which allows read-only tools only: %s was not run. "+
				"Describe the change instead, or ask the user to switch the session to another mode.", describeRefused(req))}
	}
	return rejected(req, v.Reason)
}

// classOf is where req's path lies, for the policy.
func classOf(req workspace.PermissionRequest) policy.Class {
	switch {
	case req.OutsideCwd:
		return policy.Outside
	case req.Protected != "":
		return policy.Protected
	}
	return policy.Inside
}

// protect marks an effect on the agent's own user settings file or data
// directory as protected (the tools mark .git, .acp-agent/ and the
// editors' files themselves): those lie inside a workspace when the cwd
// is the home directory or a dotfiles repository.
func (g *gate) protect(req workspace.PermissionRequest) workspace.PermissionRequest {
	if req.Protected != "" || req.Kind != workspace.KindEdit || req.Subject == "" {
		return req
	}
	lexical, resolved := req.Subject, req.Resolved
	if !filepath.IsAbs(lexical) {
		lexical = filepath.Join(g.cwd, lexical)
	}
	if resolved != "" && !filepath.IsAbs(resolved) {
		realCwd, err := filepath.EvalSymlinks(g.cwd)
		if err != nil {
			realCwd = g.cwd
		}
		resolved = filepath.Join(realCwd, resolved)
	}
	req.Protected = g.s.protector().Reason(lexical, resolved)
	return req
}

// ask sends session/request_permission on the root session and applies
// the answer.
func (g *gate) ask(ctx context.Context, b *bound, req workspace.PermissionRequest) error {
	if b == nil || b.readOnly {
		return rejected(req, "no editor session is connected to ask for permission")
	}
	if !g.s.connected() {
		return cancelled(req, errors.New("the editor disconnected"))
	}
	if g.child != nil {
		if c := g.s.announcedChild(g.child.id); c != nil {
			return g.askAsChild(ctx, c, req)
		}
		return g.askHeld(ctx, b, req)
	}
	return g.askOnRoot(ctx, b, req, nil)
}

// askHeld asks a child's question on its root session, holding it until a
// prompt of the root runs (held_questions.go), and refuses it once nobody
// answered it within the deadline.
func (g *gate) askHeld(ctx context.Context, b *bound, req workspace.PermissionRequest) error {
	h := g.s.questions()
	q := &HeldQuestion{Root: g.root, Child: g.child.id, Label: g.child.label, Title: requestTitle(req)}
	dctx, stop := h.Deadline(ctx)
	defer stop()
	if g.s.questionsAnytime() {
		err := g.askOnRoot(dctx, b, req, nil)
		if Expired(dctx) {
			return g.s.refuseExpired(b, q, req)
		}
		return err
	}
	if err := h.Hold(dctx, q); err != nil {
		if Expired(dctx) {
			return g.s.refuseExpired(b, q, req)
		}
		return cancelled(req, err)
	}
	defer q.Asked()
	err := g.askOnRoot(dctx, b, req, q)
	if Expired(dctx) {
		return g.s.refuseExpired(b, q, req)
	}
	return err
}

// askOnRoot asks req on the root session b. q, when set, is the held
// question it asks again: told once its request is going out.
func (g *gate) askOnRoot(ctx context.Context, b *bound, req workspace.PermissionRequest, q *HeldQuestion) error {
	var (
		call acpsdk.ToolCallUpdate
		ask  *childAsk
	)
	if g.child != nil {
		// The root session's client has not seen the child's call: it is
		// recorded in the root's log and shown there first, pending.
		var err error
		ask, call, err = g.recordChildAsk(ctx, b, req)
		if err != nil {
			if ask != nil {
				ask.settle(ctx, g.s, false)
			}
			g.s.log.Warn("a child's permission request could not be recorded", "session_id", b.id, "err", err)
			if errors.Is(err, session.ErrClosed) {
				return rejected(req, "the editor session was closed")
			}
			return rejected(req, "the request could not be recorded in the editor session")
		}
	} else {
		call = g.toolCall(req)
	}
	// The request refers to the tool call: its tool_call update must be
	// on the wire first.
	if err := g.s.flush(ctx, b); err != nil {
		if ask != nil {
			ask.settle(ctx, g.s, false)
		}
		return cancelled(req, err)
	}
	if q != nil {
		// Told once the request is written (the prompt that released it
		// starts its turn then).
		defer g.s.asking.watch(q, string(call.ToolCallId))()
	}
	resp, err := g.s.conn.RequestPermission(ctx, acpsdk.RequestPermissionRequest{
		SessionId: acpsdk.SessionId(g.root),
		ToolCall:  call,
		Options:   permissionOptions(req, alwaysRule(req) != "" && g.s.policyFor(g.root, g.rootCwd).CanSave()),
		Meta:      permissionMeta(req),
	})
	derr := g.decide(ctx, req, resp, err)
	if ask != nil {
		ask.settle(ctx, g.s, derr == nil)
	}
	return derr
}

// MetaPathClass is the _meta key of a permission request about a
// protected or outside path: its value is PathProtected or PathOutside.
// A client that answers without a person (acp-agent exec --ask allow)
// tells by it a question a person could answer "allow once" to in the
// default mode from one that stays the person's.
const MetaPathClass = "acp-agent/pathClass"

// Values of MetaPathClass.
const (
	PathProtected = "protected"
	PathOutside   = "outside"
)

// permissionMeta marks a question about a protected or an outside path.
func permissionMeta(req workspace.PermissionRequest) map[string]any {
	switch {
	case req.OutsideCwd:
		return map[string]any{MetaPathClass: PathOutside}
	case req.Protected != "":
		return map[string]any{MetaPathClass: PathProtected}
	}
	return nil
}

// decide maps the client's answer to nil (allowed) or a refusal.
func (g *gate) decide(ctx context.Context, req workspace.PermissionRequest, resp acpsdk.RequestPermissionResponse, err error) error {
	if err != nil {
		if ctx.Err() != nil {
			return cancelled(req, context.Cause(ctx))
		}
		// The connection ended while asking (stdin EOF): nobody rejected
		// the call, so it is cancelled, never recorded as the user's "no".
		if !g.s.connected() {
			return cancelled(req, fmt.Errorf("the editor disconnected: %w", err))
		}
		return rejected(req, "the editor did not answer the permission request: "+err.Error())
	}
	if resp.Outcome.Cancelled != nil || resp.Outcome.Selected == nil {
		return cancelled(req, errors.New("the prompt was cancelled"))
	}
	id := string(resp.Outcome.Selected.OptionId)
	switch canonicalOption(id) {
	case OptionAllowOnce:
		return nil
	case OptionAllowAlways:
		if g.saveAlways(req) {
			return nil
		}
		g.s.remember(g.root, g.requester, alwaysKey(req), true)
		return nil
	case OptionRejectAlways:
		g.s.remember(g.root, g.requester, alwaysKey(req), false)
		return rejected(req, "the user rejected it and chose to always reject this kind of call in this session")
	case OptionRejectOnce:
		return rejected(req, "the user rejected it")
	}
	return rejected(req, fmt.Sprintf("the editor answered with an unknown option %q", id))
}

// toolCall is the tool call a permission request of the root session's
// own refers to (a child's is rendered from its record: childAskCall).
func (g *gate) toolCall(req workspace.PermissionRequest) acpsdk.ToolCallUpdate {
	title := requestTitle(req)
	call := acpsdk.ToolCallUpdate{
		ToolCallId: acpsdk.ToolCallId(req.CallID),
		Kind:       acpsdk.Ptr(acpsdk.ToolKind(req.Kind)),
		Content:    requestContent(req.Detail, req.Protected, req.Display),
	}
	if req.Display != nil {
		call.Locations = acpLocations(req.Display.Locations, g.cwd)
		call.Meta = mergeMeta(req.Display.Meta)
	}
	call.Title = acpsdk.Ptr(title)
	return call
}

// childCallStart is the tool_call that shows a child's call on the root
// session before its permission request.
func childCallStart(call acpsdk.ToolCallUpdate) acpsdk.SessionUpdate {
	tc := &acpsdk.SessionUpdateToolCall{
		ToolCallId: call.ToolCallId,
		Title:      *call.Title,
		Status:     acpsdk.ToolCallStatusPending,
		Content:    call.Content,
		Locations:  call.Locations,
		Meta:       call.Meta,
	}
	if call.Kind != nil {
		tc.Kind = *call.Kind
	}
	return acpsdk.SessionUpdate{ToolCall: tc}
}

// alwaysKey is what an "always" answer covers (policy.AlwaysKey).
func alwaysKey(req workspace.PermissionRequest) string { return policy.AlwaysKey(req.Kind, req.Tool) }

// permissionOptions are the four choices, named for what "always" covers;
// saves says an "always allow" is saved as a rule for the project.
func permissionOptions(req workspace.PermissionRequest, saves bool) []acpsdk.PermissionOption {
	noun := "calls of this kind"
	switch req.Kind {
	case workspace.KindEdit:
		noun = "edits inside the working directory"
	case workspace.KindExecute:
		noun = "every command"
	case workspace.KindRead:
		noun = "reads"
	case workspace.KindSearch:
		noun = "searches"
	case workspace.KindOther:
		if req.Tool != "" {
			noun = "the tool " + req.Tool
		}
	}
	allow := "Always allow " + noun + " in this session"
	switch {
	case saves && req.Kind == workspace.KindExecute:
		allow = "Always allow exactly this command in this project"
	case saves && req.Kind == workspace.KindEdit:
		_, covers := policy.EditRule(req.Subject)
		allow = "Always allow edits " + covers + " in this project"
	case saves:
		allow = "Always allow " + noun + " in this project"
	}
	if req.OutsideCwd || req.Protected != "" {
		// "Always" never covers outside or protected paths: they ask again.
		allow += " (this path still asks)"
	}
	return []acpsdk.PermissionOption{
		{OptionId: OptionAllowOnce, Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
		{OptionId: OptionAllowAlways, Name: allow, Kind: acpsdk.PermissionOptionKindAllowAlways},
		{OptionId: OptionRejectOnce, Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
		{OptionId: OptionRejectAlways, Name: "Always reject " + noun + " in this session", Kind: acpsdk.PermissionOptionKindRejectAlways},
	}
}

// requestTitle is req's title as shown: escaped, so control and bidi
// characters cannot hide what runs.
func requestTitle(req workspace.PermissionRequest) string {
	title := req.Title
	if title == "" {
		title = req.Tool
	}
	return workspace.EscapeTitle(title)
}

// requestContent is a request's content: why the path is protected, the
// detail text (the whole command, the MCP arguments), then the display.
func requestContent(detail, protected string, d *session.ToolDisplay) []acpsdk.ToolCallContent {
	var out []acpsdk.ToolCallContent
	if protected != "" {
		out = append(out, acpsdk.ToolContent(acpsdk.TextBlock("Protected path: "+protected)))
	}
	if detail != "" {
		out = append(out, acpsdk.ToolContent(acpsdk.TextBlock(detail)))
	}
	return append(out, displayContent(d)...)
}

// describeRefused names a call plan mode refused without what the tool
// found out about its path: for a path outside the cwd (or with other
// names outside it) the path as the model gave it, not the title, whose
// note would tell the model what plan mode must not (that a file exists,
// has another hard link, or resolves elsewhere).
func describeRefused(req workspace.PermissionRequest) string {
	if req.OutsideCwd && req.Subject != "" {
		return fmt.Sprintf("%s (%s)", req.Tool, workspace.EscapeTitle(req.Subject))
	}
	return describeCall(req)
}

func describeCall(req workspace.PermissionRequest) string {
	if req.Title != "" {
		return fmt.Sprintf("%s (%s)", req.Tool, req.Title)
	}
	return req.Tool
}

// rejected is the model-visible refusal of req.
func rejected(req workspace.PermissionRequest, why string) error {
	return &tool.Error{Code: workspace.CodePermissionRejected, Message: fmt.Sprintf(
		"permission denied for %s: %s. Do not retry it; ask the user how to proceed.", describeCall(req), why)}
}

// cancelled is the refusal of req when the prompt was cancelled while
// asking.
func cancelled(req workspace.PermissionRequest, cause error) error {
	return &tool.Error{Code: workspace.CodePermissionCancelled, Message: fmt.Sprintf(
		"permission request for %s was cancelled", describeCall(req)), Err: cause}
}

// remembered returns the decision remembered for session requester (the
// root itself or one of its children) and key. The answers live under the
// root and go with it (gateState.forget), children's included.
func (s *Server) remembered(root, requester, key string) (allow, ok bool) {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	allow, ok = s.gate.always[root][requester+"\x00"+key]
	return allow, ok
}

func (s *Server) remember(root, requester, key string, allow bool) {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	if s.gate.always == nil {
		s.gate.always = map[string]map[string]bool{}
	}
	if s.gate.always[root] == nil {
		s.gate.always[root] = map[string]bool{}
	}
	s.gate.always[root][requester+"\x00"+key] = allow
}

// boundSession returns the session bound as id, or nil.
func (s *Server) boundSession(id string) *bound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// connDone is closed once the connection ended (never before Serve).
func (s *Server) connDone() <-chan struct{} {
	select {
	case <-s.ready:
		return s.conn.Done()
	default:
		return nil
	}
}
