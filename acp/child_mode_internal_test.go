package acp

import (
	"context"
	"testing"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// A child whose descriptor records a permission mode is decided in that
// mode: a narrower one is asked or refused where its root would allow,
// a project's broader one never widens the root, the person's own does
// (except out of plan). gateServer tells "asked" (PERMISSION_CANCELLED:
// no client to ask) from "allowed" ("") and "refused" (other codes).
func TestChildModeFromItsDescriptor(t *testing.T) {
	const (
		allowed = ""
		asked   = workspace.CodePermissionCancelled
		refused = workspace.CodeModeForbids
	)
	tests := []struct {
		name, root, desc string
		req              workspace.PermissionRequest
		want             string
	}{
		{"no mode: the root's", ModeAcceptEdits, `{"version":2,"mode":"one-shot","provider":"spawn"}`, editReq, allowed},
		{"plan under accept-edits", ModeAcceptEdits, permDesc("plan", "project"), editReq, refused},
		{"plan under bypass", ModeBypass, permDesc("plan", "user"), execReq, refused},
		{"default under accept-edits", ModeAcceptEdits, permDesc("default", "project"), editReq, asked},
		{"default under bypass", ModeBypass, permDesc("default", "project"), execReq, asked},
		{"project accept-edits under default", ModeDefault, permDesc("accept-edits", "project"), editReq, asked},
		{"project bypass under default", ModeDefault, permDesc("bypass", "project"), execReq, asked},
		{"user accept-edits under default", ModeDefault, permDesc("accept-edits", "user"), editReq, allowed},
		{"user bypass under plan", ModePlan, permDesc("bypass", "user"), editReq, refused},
		{"reads stay allowed in plan", ModeDefault, permDesc("plan", "project"),
			workspace.PermissionRequest{CallID: "r", Tool: "read", Kind: workspace.KindRead, Subject: "a.txt"}, allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := gateServer(map[string]string{"root": tt.root})
			st := session.NewStore(session.WallSources{})
			s.opts.Sessions = st
			s.opts.Settings = func(string) *settings.Policy { return settings.Load("", "") }
			cs, err := st.Create(session.Header{Cwd: "/w", Origin: session.OriginSubagent, ParentSession: "root"}, session.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.AppendRaw(session.TypeDescriptor, []byte(tt.desc)); err != nil {
				t.Fatal(err)
			}
			rec := s.childRecordOf("root", cs.ID())
			g := childGate(s, cs.ID(), "root")
			g.child.mode, g.child.scope = rec.PermissionMode, rec.PermissionScope
			if got := codeOf(g.Authorize(context.Background(), tt.req)); got != tt.want {
				t.Errorf("child: %q, want %q", got, tt.want)
			}
			// The root itself decides in its own mode.
			rootWant := codeOf(rootGate(s, "root").Authorize(context.Background(), tt.req))
			if policy.Mode(tt.root) == policy.ModeAcceptEdits && tt.req.Kind == workspace.KindEdit && rootWant != allowed {
				t.Errorf("root in accept-edits: %q, want the edit allowed", rootWant)
			}
		})
	}
}

func permDesc(mode, scope string) string {
	return `{"version":2,"mode":"continuable","provider":"spawn","label":"x","permissionMode":"` + mode + `","permissionScope":"` + scope + `"}`
}

// A forked child's seed holds its parent's descriptor: the child's own
// (after the seed) is the one that counts.
func TestChildRecordSkipsTheSeed(t *testing.T) {
	s := gateServer(map[string]string{"root": ModeBypass})
	st := session.NewStore(session.WallSources{})
	s.opts.Sessions = st
	seed := []session.Event{
		{Type: session.TypeDescriptor, Seq: 0, Data: []byte(permDesc("bypass", "user"))},
		{Type: session.TypeEndSeed, Seq: 1, Data: []byte("{}")},
	}
	cs, err := st.Create(session.Header{Cwd: "/w", Origin: session.OriginSubagent, ParentSession: "root", SeedLength: 2}, session.CreateOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if rec := s.childRecordOf("root", cs.ID()); rec.PermissionMode != "" {
		t.Fatalf("before its own descriptor: %+v", rec)
	}
	if _, err := cs.AppendRaw(session.TypeDescriptor, []byte(`{"version":2,"mode":"one-shot","provider":"fork","label":"f","permissionMode":"plan","permissionScope":"project"}`)); err != nil {
		t.Fatal(err)
	}
	if rec := s.childRecordOf("root", cs.ID()); rec.PermissionMode != "plan" || rec.Label != "f" {
		t.Fatalf("own descriptor: %+v", rec)
	}
}
