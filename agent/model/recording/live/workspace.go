package live

// This file taps the workspace the tools use: the recording snapshots a
// file only when a file tool (read, edit, write), the gate having
// allowed it, is about to read or change it, by the path the call
// resolved to. A call the gate refused (a deny rule, --ask deny, a
// refused question) copies nothing.

import (
	"context"
	"path/filepath"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// fileTools are the tools whose allowed call reads or changes the file
// its request names (edit and write read it too: a replay must start
// from the state before the change).
var fileTools = map[string]bool{"read": true, "edit": true, "write": true}

// WrapWorkspace returns the wrapper of the composition's workspace
// resolver (after prev, when set): it goes in the composition's
// Config.WrapWorkspace. Call it after WrapModel.
func (r *Exec) WrapWorkspace(prev func(workspace.Resolver) workspace.Resolver) func(workspace.Resolver) workspace.Resolver {
	return func(res workspace.Resolver) workspace.Resolver {
		if prev != nil {
			res = prev(res)
		}
		return tapResolver{inner: res, r: r}
	}
}

type tapResolver struct {
	inner workspace.Resolver
	r     *Exec
}

func (t tapResolver) Env(ctx context.Context, sessionID string) (workspace.Env, error) {
	env, err := t.inner.Env(ctx, sessionID)
	if err != nil || env.Permissions == nil {
		return env, err
	}
	t.r.mu.Lock()
	recorded := t.r.cwd != "" && filepath.Clean(env.Cwd) == filepath.Clean(t.r.cwd)
	t.r.mu.Unlock()
	if recorded {
		// The deny rules of the recorded directory's sessions: a file
		// they keep from the tools is never copied, even when found by
		// a search.
		perms := env.Permissions
		t.r.rec.SetDenied(func(rel string) bool {
			return workspace.ReadDenied(perms, "read", workspace.KindRead, rel)
		})
	}
	env.Permissions = &gateTap{inner: env.Permissions, r: t.r, session: sessionID, cwd: env.Cwd}
	return env, nil
}

// gateTap passes every question to the real gate and, when a file tool's
// call was allowed, snapshots its file before the tool goes on.
type gateTap struct {
	inner   workspace.Permissions
	r       *Exec
	session string
	cwd     string
}

func (g *gateTap) Authorize(ctx context.Context, req workspace.PermissionRequest) error {
	if err := g.inner.Authorize(ctx, req); err != nil {
		return err
	}
	if !fileTools[req.Tool] || req.Resolved == "" {
		return nil
	}
	if req.OutsideCwd {
		if !filepath.IsAbs(req.Subject) {
			// Inside by name, outside once resolved (a symlinked folder,
			// a hard link): never copied, and said.
			g.r.rec.Outside(g.session, req.Subject)
		}
		return nil
	}
	abs := req.Resolved
	if !filepath.IsAbs(abs) {
		real := g.cwd
		if rp, err := filepath.EvalSymlinks(g.cwd); err == nil {
			real = rp
		}
		abs = filepath.Join(real, filepath.FromSlash(abs))
	}
	g.r.rec.Touched(g.session, abs)
	return nil
}

// ReadDenied keeps the real gate's read filter (the search tools skip
// what its deny rules cover).
func (g *gateTap) ReadDenied(tool, kind, name string) bool {
	return workspace.ReadDenied(g.inner, tool, kind, name)
}

// EstimateTokens returns the composition's Config.EstimateTokens: it
// notes the token estimates the automatic compaction decisions use, so
// the replay decides on the same figures. Call it after WrapModel.
func (r *Exec) EstimateTokens() func(c model.Caller, estimate int) int {
	return r.rec.Estimate
}
