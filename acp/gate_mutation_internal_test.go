package acp

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/search"
)

// The tests in this file kill the permission mutations that survived the
// security review (issue 24): each names the mutation it catches.

// gateServer is a Server with bound root sessions in the given modes and
// no connection: a request that reaches the point of asking comes back
// PERMISSION_CANCELLED ("the editor disconnected"), so "asked" is told
// apart from "allowed silently" (nil) and from "refused by the mode or a
// remembered answer" (other codes).
func gateServer(modes map[string]string) *Server {
	s := &Server{log: slog.New(slog.DiscardHandler), ready: make(chan struct{}), sessions: map[string]*bound{}}
	s.gate.modes = map[string]string{}
	for id, m := range modes {
		s.sessions[id] = &bound{id: id}
		s.gate.modes[id] = m
	}
	return s
}

func rootGate(s *Server, id string) *gate {
	return &gate{s: s, requester: id, root: id, cwd: "/w", rootCwd: "/w"}
}

func childGate(s *Server, child, root string) *gate {
	return &gate{s: s, requester: child, root: root, cwd: "/w", rootCwd: "/w", child: &childIdentity{id: child, depth: 1}}
}

func codeOf(err error) string {
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Code
	}
	if err != nil {
		return "?" + err.Error()
	}
	return ""
}

var (
	editReq = workspace.PermissionRequest{CallID: "c", Tool: "write", Kind: workspace.KindEdit, Title: "Write a.txt", Subject: "a.txt"}
	execReq = workspace.PermissionRequest{CallID: "c", Tool: "bash", Kind: workspace.KindExecute, Title: "ls", Subject: "ls"}
)

func selected(id string) acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(id))}
}

// Mutation: an unknown option id treated as allow.
func TestUnknownOptionIsRejected(t *testing.T) {
	s := gateServer(map[string]string{"root": ModeDefault})
	g := rootGate(s, "root")
	for _, id := range []string{"allow", "allowonce", "ALLOW_ONCE", "ALLOW-ONCE", "", "allow-always ", "allow_always "} {
		err := g.decide(context.Background(), execReq, selected(id), nil)
		if codeOf(err) != workspace.CodePermissionRejected {
			t.Errorf("option %q: %v, want %s", id, err, workspace.CodePermissionRejected)
		}
	}
	if _, ok := s.remembered("root", "root", alwaysKey(execReq)); ok {
		t.Error("an unknown option was remembered")
	}
}

// Mutation: allow-always made global across sessions.
func TestAllowAlwaysStaysWithItsSession(t *testing.T) {
	s := gateServer(map[string]string{"a": ModeDefault, "b": ModeDefault})
	a, b := rootGate(s, "a"), rootGate(s, "b")
	if err := a.decide(context.Background(), editReq, selected(OptionAllowAlways), nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Authorize(context.Background(), editReq); err != nil {
		t.Fatalf("session a's own always-allow not applied: %v", err)
	}
	if got := codeOf(b.Authorize(context.Background(), editReq)); got != workspace.CodePermissionCancelled {
		t.Errorf("session b: %q, want it asked (%s): a's always-allow must not cover b", got, workspace.CodePermissionCancelled)
	}
}

// Mutation: the mode taken from the requesting child instead of its root.
func TestChildFollowsItsRootsMode(t *testing.T) {
	for _, tt := range []struct {
		rootMode string
		req      workspace.PermissionRequest
		want     string
	}{
		{ModePlan, editReq, workspace.CodeModeForbids},
		{ModePlan, execReq, workspace.CodeModeForbids},
		{ModeBypass, execReq, ""},
		{ModeAcceptEdits, editReq, ""},
		{ModeAcceptEdits, execReq, workspace.CodePermissionCancelled},
	} {
		// The child is bound too (as a read-only view, in default mode
		// of its own): only the root's mode may decide.
		s := gateServer(map[string]string{"root": tt.rootMode, "child": ModeDefault})
		if got := codeOf(childGate(s, "child", "root").Authorize(context.Background(), tt.req)); got != tt.want {
			t.Errorf("root in %s, child %s: %q, want %q", tt.rootMode, tt.req.Kind, got, tt.want)
		}
	}
}

// Mutations: a child's allow-always stored under the root; a child
// looking up the root's remembered answers.
func TestChildAnswersAreTheChilds(t *testing.T) {
	ctx := context.Background()
	s := gateServer(map[string]string{"root": ModeDefault})
	child, root := childGate(s, "child", "root"), rootGate(s, "root")
	if err := child.decide(ctx, editReq, selected(OptionAllowAlways), nil); err != nil {
		t.Fatal(err)
	}
	if err := child.Authorize(ctx, editReq); err != nil {
		t.Errorf("the child's always-allow not applied to the child: %v", err)
	}
	if got := codeOf(root.Authorize(ctx, editReq)); got != workspace.CodePermissionCancelled {
		t.Errorf("root: %q, want it asked: a child's always-allow is not the root's", got)
	}
	if _, ok := s.remembered("root", "root", alwaysKey(editReq)); ok {
		t.Error("the child's answer was stored under the root")
	}

	// The other way round: the root's answers are not the child's.
	s = gateServer(map[string]string{"root": ModeDefault})
	child, root = childGate(s, "child", "root"), rootGate(s, "root")
	if err := root.decide(ctx, editReq, selected(OptionAllowAlways), nil); err != nil {
		t.Fatal(err)
	}
	if got := root.decide(ctx, execReq, selected(OptionRejectAlways), nil); codeOf(got) != workspace.CodePermissionRejected {
		t.Fatalf("reject-always: %v", got)
	}
	if got := codeOf(child.Authorize(ctx, editReq)); got != workspace.CodePermissionCancelled {
		t.Errorf("child edit: %q, want it asked: the root's always-allow is not the child's", got)
	}
	if got := codeOf(child.Authorize(ctx, execReq)); got != workspace.CodePermissionCancelled {
		t.Errorf("child command: %q, want it asked: the root's always-reject is not the child's", got)
	}
}

// TestProtectedPathsAskInEveryModeButBypass: a write where a write becomes
// a command (.git/, editor task files, the agent's settings) asks even in
// accept-edits and after "always allow edits", says why in the question,
// and runs in bypass; plan still refuses it.
func TestProtectedPathsAskInEveryModeButBypass(t *testing.T) {
	ctx := context.Background()
	req := editReq
	req.Subject, req.Protected = ".git/config", "a write under .git/ can run code"
	for mode, want := range map[string]string{
		ModeDefault:     workspace.CodePermissionCancelled,
		ModeAcceptEdits: workspace.CodePermissionCancelled,
		ModePlan:        workspace.CodeModeForbids,
		ModeBypass:      "",
	} {
		s := gateServer(map[string]string{"root": mode})
		g := rootGate(s, "root")
		s.remember("root", "root", alwaysKey(req), true)
		if got := codeOf(g.Authorize(ctx, req)); got != want {
			t.Errorf("%s: %q, want %q", mode, got, want)
		}
	}
	content := requestContent(req.Detail, req.Protected, nil)
	if len(content) == 0 || content[0].Content == nil || content[0].Content.Content.Text == nil ||
		content[0].Content.Content.Text.Text != "Protected path: "+req.Protected {
		t.Errorf("the question does not say why: %+v", content)
	}
	if name := permissionOptions(req, false)[1].Name; name != "Always allow edits inside the working directory in this session (this path still asks)" {
		t.Errorf("always option = %q", name)
	}
}

// TestOutsidePathsNeedARuleThatNamesThem: outside the cwd an allow rule
// applies only when its pattern names the path; a rule for the whole tool
// still asks. Children follow the root's settings.
func TestOutsidePathsNeedARuleThatNamesThem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	user := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(user, []byte(`{"permissions": {"allow": ["read", "read(/etc/hostname)"], "deny": ["bash(rm *)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := gateServer(map[string]string{"root": ModeDefault})
	s.opts.Settings = func(cwd string) *settings.Policy { return settings.Load(user, cwd) }
	named := workspace.PermissionRequest{CallID: "c", Tool: "read", Kind: workspace.KindRead, Subject: "/etc/hostname", OutsideCwd: true}
	other := named
	other.Subject = "/etc/passwd"
	rm := execReq
	rm.Subject = "rm -rf build"
	for _, g := range []*gate{rootGate(s, "root"), childGate(s, "child", "root")} {
		if err := g.Authorize(ctx, named); err != nil {
			t.Errorf("%s: a user rule naming the outside path: %v", g.requester, err)
		}
		if got := codeOf(g.Authorize(ctx, other)); got != workspace.CodePermissionCancelled {
			t.Errorf("%s: an outside path under a rule for the whole tool: %q, want it asked", g.requester, got)
		}
		if got := codeOf(g.Authorize(ctx, rm)); got != workspace.CodeRuleDenies {
			t.Errorf("%s: rm: %q, want %s", g.requester, got, workspace.CodeRuleDenies)
		}
	}
}

// TestPlanRefusalTellsNothingOfThePath: plan mode refuses a write the
// same way whether its path has another hard link, resolves outside the
// cwd or is a plain inside file: the refusal names the path as the model
// gave it, never what the tool found out about it.
func TestPlanRefusalTellsNothingOfThePath(t *testing.T) {
	ctx := context.Background()
	linked := editReq
	linked.Subject, linked.Title, linked.OutsideCwd = "notes.txt", "Write notes.txt (a file with more than one hard link: another of its names may be outside the working directory)", true
	resolvedOut := editReq
	resolvedOut.Subject, resolvedOut.Title, resolvedOut.OutsideCwd = "docs/x.md", "Write /elsewhere/x.md (outside the working directory)", true
	for _, own := range []bool{false, true} {
		s := gateServer(map[string]string{"root": ModePlan})
		g := rootGate(s, "root")
		if own {
			// A child whose definition asks for plan, under a root in
			// default mode.
			s = gateServer(map[string]string{"root": ModeDefault})
			g = childGate(s, "child", "root")
			g.child.mode = ModePlan
		}
		for _, req := range []workspace.PermissionRequest{linked, resolvedOut} {
			err := g.Authorize(ctx, req)
			if codeOf(err) != workspace.CodeModeForbids {
				t.Fatalf("%s: %v, want %s", req.Subject, err, workspace.CodeModeForbids)
			}
			msg := err.Error()
			for _, leak := range []string{"hard link", "/elsewhere", "outside the working directory"} {
				if strings.Contains(msg, leak) {
					t.Errorf("own=%v: the refusal of %s says %q: %s", own, req.Subject, leak, msg)
				}
			}
			if !strings.Contains(msg, "write ("+req.Subject+")") {
				t.Errorf("own=%v: the refusal does not name the call as given: %s", own, msg)
			}
		}
	}
}

// TestDenyRuleCoversAHardLink: "deny read(.env)" denies a read of
// another name of the same file (a hard link the model made or found),
// which rules matching names alone would only ask about; a link to a
// file no rule denies is asked as before.
func TestDenyRuleCoversAHardLink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	user := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(user, []byte(`{"permissions": {"deny": ["read(.env)", "edit(config/prod.yml)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{".env": "SECRET=1\n", "plain.txt": "hello\n", "config/prod.yml": "db: x\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"notes.txt": ".env", "other.txt": "plain.txt", "p.yml": "config/prod.yml"} {
		if err := os.Link(filepath.Join(dir, target), filepath.Join(dir, link)); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	s := gateServer(map[string]string{"root": ModeDefault})
	s.opts.Settings = func(cwd string) *settings.Policy { return settings.Load(user, cwd) }
	g := rootGate(s, "root")
	g.cwd, g.rootCwd = dir, dir
	for _, tc := range []struct {
		tool, kind, path, want string
	}{
		{"read", workspace.KindRead, "notes.txt", workspace.CodeRuleDenies},
		{"grep", "search", "notes.txt", workspace.CodeRuleDenies},
		{"write", workspace.KindEdit, "p.yml", workspace.CodeRuleDenies},
		{"read", workspace.KindRead, "p.yml", workspace.CodePermissionCancelled}, // the rule denies edits only
		{"read", workspace.KindRead, "other.txt", workspace.CodePermissionCancelled},
	} {
		req := workspace.PermissionRequest{CallID: "c", Tool: tc.tool, Kind: tc.kind, Subject: tc.path, Resolved: tc.path, OutsideCwd: true}
		if got := codeOf(g.Authorize(ctx, req)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.tool, tc.path, got, tc.want)
		}
	}
}

// TestWorktreeChildReadsTheProjectRules: a child whose cwd is a worktree
// of the project matches the project's rules against its own paths and
// against the same file's path in the project, where a deny or an ask
// counts and an allow does not (the parent's checkout stays outside the
// child).
func TestWorktreeChildReadsTheProjectRules(t *testing.T) {
	ctx := context.Background()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(dir, ".acp-agent", "worktrees", "child")
	for _, name := range []string{"config/prod.yml", "docs/a.md", "src/a.go", wt + "/config/prod.yml", wt + "/src/a.go"} {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	user := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(user, []byte(`{"permissions": {"deny": ["read(config/prod.yml)"], "ask": ["read(docs/*)"], "allow": ["edit(src/**)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := gateServer(map[string]string{"root": ModeDefault})
	s.opts.Settings = func(cwd string) *settings.Policy { return settings.Load(user, cwd) }
	g := childGate(s, "child", "root")
	g.cwd, g.rootCwd = wt, dir
	for _, tc := range []struct {
		tool, kind, path string
		rule             policy.Rule
		want             string
	}{
		{"read", workspace.KindRead, filepath.Join(dir, "config/prod.yml"), policy.RuleDeny, workspace.CodeRuleDenies},
		{"grep", "search", filepath.Join(dir, "config/prod.yml"), policy.RuleDeny, workspace.CodeRuleDenies},
		{"read", workspace.KindRead, "config/prod.yml", policy.RuleDeny, workspace.CodeRuleDenies},
		{"read", workspace.KindRead, filepath.Join(dir, "docs/a.md"), policy.RuleAsk, workspace.CodePermissionCancelled},
		// The user's allow for the project's src/ covers the worktree's
		// own src/, not the parent's.
		{"write", workspace.KindEdit, "src/a.go", policy.RuleAllow, ""},
		{"write", workspace.KindEdit, filepath.Join(dir, "src/a.go"), policy.RuleNone, workspace.CodePermissionCancelled},
	} {
		p, err := workspace.ResolvePath(wt, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		req := workspace.PermissionRequest{CallID: "c", Tool: tc.tool, Kind: tc.kind, Subject: workspace.DisplayPath(wt, p.Abs),
			Resolved: workspace.ResolvedSubject(p), OutsideCwd: p.OutsideCwd}
		if rule, text, _ := g.ruleDecision(req); rule != tc.rule {
			t.Errorf("%s %s: rule %v (%q), want %v", tc.tool, tc.path, rule, text, tc.rule)
		}
		if got := codeOf(g.Authorize(ctx, req)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.tool, tc.path, got, tc.want)
		}
		if tc.rule == policy.RuleDeny && g.ReadDenied(tc.tool, tc.kind, tc.path) != (tc.kind != workspace.KindEdit) {
			t.Errorf("%s %s: not skipped by a search", tc.tool, tc.path)
		}
	}
}

// TestWildcardDenyOfAHardLinkFailsClosed: a file with two links, under a
// wildcard deny rule whose search for its other names stops at the bound,
// is denied with a note saying why; the bound is the search tools'.
func TestWildcardDenyOfAHardLinkFailsClosed(t *testing.T) {
	if maxOtherNameEntries != search.MaxVisited {
		t.Errorf("maxOtherNameEntries = %d, want search.MaxVisited (%d)", maxOtherNameEntries, search.MaxVisited)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "e.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	user := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(user, []byte(`{"permissions": {"deny": ["read(**/.env)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := gateServer(map[string]string{"root": ModeDefault})
	s.opts.Settings = func(cwd string) *settings.Policy { return settings.Load(user, cwd) }
	g := rootGate(s, "root")
	g.cwd, g.rootCwd = dir, dir
	req := workspace.PermissionRequest{CallID: "c", Tool: "read", Kind: workspace.KindRead, Subject: "e.txt", Resolved: "e.txt", OutsideCwd: true}
	if rule, text, note := g.rules(req, 3); rule != policy.RuleDeny || text != "read(**/.env)" || !strings.Contains(note, "stopped after 3 directory entries") {
		t.Errorf("at the bound: %v %q %q; want a deny saying the search stopped", rule, text, note)
	}
	if rule, _, _ := g.rules(req, 100); rule != policy.RuleNone {
		t.Errorf("within the bound: %v, want none (no .env is this file)", rule)
	}
	if got := codeOf(g.Authorize(context.Background(), req)); got != workspace.CodePermissionCancelled {
		t.Errorf("Authorize: %q, want asked (%s)", got, workspace.CodePermissionCancelled)
	}
}
