package subagent

// This file defines the parent's merge-back tools: `merge_worktree` and
// `discard_worktree` (merge.go does the work). Both are gated: the person
// is asked through the session's permission gate, and the question of a
// merge shows what it brings as ACP diff content.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Names of the merge-back tools.
const (
	MergeWorktreeToolName   = "merge_worktree"
	DiscardWorktreeToolName = "discard_worktree"
)

const (
	mergeWorktreeParameters  = `{"type":"object","properties":{"subagent_id":{"type":"string","description":"The id of a settled subagent that ran with isolation \"worktree\"."},"squash":{"type":"boolean","description":"Merge its work as one new commit instead of merging its branch (default false)."}},"required":["subagent_id"],"additionalProperties":false}`
	mergeWorktreeDescription = "Merge the work of one of your settled subagents that ran in its own git worktree into the branch " +
		"checked out in your working tree. Its work is committed on its branch (acp-agent/ID) when it settles; this merges " +
		"that branch (or, with squash, applies it as one new commit), then removes its worktree and branch. The person is " +
		"shown the diff and asked first. On a conflict the merge is aborted, nothing changes, and the error names the " +
		"conflicting files: resolve them yourself (for example with send_message to the subagent, or by editing) or ask."

	discardWorktreeParameters  = `{"type":"object","properties":{"subagent_id":{"type":"string","description":"The id of a settled subagent that ran with isolation \"worktree\"."}},"required":["subagent_id"],"additionalProperties":false}`
	discardWorktreeDescription = "Drop the work of one of your settled subagents that ran in its own git worktree: its worktree " +
		"and its branch (acp-agent/ID) are deleted, with every change it made there. The person is asked first."
)

// Preview bounds of the merge question.
const (
	previewFiles = 50
	previewBytes = 256 << 10
)

// MergeWorktreeTool is the `merge_worktree` tool.
type MergeWorktreeTool struct {
	svc *Service
	r   workspace.Resolver
}

// DiscardWorktreeTool is the `discard_worktree` tool.
type DiscardWorktreeTool struct {
	svc *Service
	r   workspace.Resolver
}

var (
	_ tool.Tool = (*MergeWorktreeTool)(nil)
	_ tool.Tool = (*DiscardWorktreeTool)(nil)
)

// WorktreeTools returns `merge_worktree` and `discard_worktree` over rt,
// asking through r's permission gate.
func WorktreeTools(rt *Runtime, r workspace.Resolver) []tool.Tool {
	return []tool.Tool{&MergeWorktreeTool{rt.Service, r}, &DiscardWorktreeTool{rt.Service, r}}
}

// Spec returns the tool's name, description and parameter schema.
func (t *MergeWorktreeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: MergeWorktreeToolName, Description: mergeWorktreeDescription, Parameters: json.RawMessage(mergeWorktreeParameters)}
}

// Kind is "edit": it changes the parent's tree.
func (t *MergeWorktreeTool) Kind() string { return workspace.KindEdit }

// Execute previews the merge, asks with the diff, and merges.
func (t *MergeWorktreeTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	caller, ok := inv.Caller.(*agent.Agent)
	if !ok || caller == nil {
		return tool.Result{}, errors.New("merge_worktree requires a calling agent")
	}
	var args struct {
		SubagentID string `json:"subagent_id"`
		Squash     bool   `json:"squash"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil || args.SubagentID == "" {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "give subagent_id: the id of a settled subagent that ran in a worktree"}
	}
	env, err := workspace.EnvFor(ctx, t.r, inv)
	if err != nil {
		return tool.Result{}, err
	}
	req := WorktreeRequest{ChildID: args.SubagentID, ParentID: caller.ID(), Squash: args.Squash}
	rec, files, more, err := t.svc.PreviewMerge(ctx, req, previewFiles, previewBytes)
	if err != nil {
		return tool.Result{}, err
	}
	display := &session.ToolDisplay{}
	for _, f := range files {
		abs := filepath.Join(rec.Repo, filepath.FromSlash(f.Path))
		display.Diffs = append(display.Diffs, session.ToolDiff{Path: abs, OldText: f.OldText, NewText: f.NewText})
		display.Locations = append(display.Locations, session.ToolLocation{Path: abs})
	}
	how := "Merge"
	if args.Squash {
		how = "Squash-merge"
	}
	title := fmt.Sprintf("%s %s into your branch (%d file(s))", how, rec.Branch, len(files)+more)
	detail := fmt.Sprintf("%s the work of subagent %s (branch `%s`) into the branch checked out in `%s`; its worktree and branch are then removed.", how, args.SubagentID, rec.Branch, rec.Repo)
	if more > 0 {
		detail += fmt.Sprintf(" %d more file(s) are not shown.", more)
	}
	if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: MergeWorktreeToolName, Kind: workspace.KindEdit, Title: title,
		Display: display, Subject: rec.Branch, Detail: detail,
	}); err != nil {
		return workspace.Failed(err, display), nil
	}
	out, err := t.svc.MergeWorktree(ctx, req)
	if err != nil {
		return workspace.Failed(err, display), nil
	}
	res := tool.TextResult(MergeSummary(out), map[string]any{
		"subagentId": args.SubagentID, "branch": out.Branch, "into": out.Into, "commit": out.Head, "squash": out.Squash, "diffstat": out.Stat,
	})
	res.Display = display
	return res, nil
}

// MergeSummary says what a merge did, for the model and the person.
func MergeSummary(o MergeOutcome) string {
	into := o.Into
	if into == "" {
		into = "the detached HEAD"
	}
	how := "Merged"
	if o.Squash {
		how = "Squash-merged"
	}
	text := fmt.Sprintf("%s branch %s into %s (commit %s). Its worktree and branch were removed.", how, o.Branch, into, shortHash(o.Head))
	if s := strings.TrimSpace(o.Stat); s != "" {
		text += "\n" + o.Stat
	}
	return text
}

// Spec returns the tool's name, description and parameter schema.
func (t *DiscardWorktreeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: DiscardWorktreeToolName, Description: discardWorktreeDescription, Parameters: json.RawMessage(discardWorktreeParameters)}
}

// Kind is "edit": it deletes a worktree and a branch.
func (t *DiscardWorktreeTool) Kind() string { return workspace.KindEdit }

// Execute asks, then removes the worktree and its branch.
func (t *DiscardWorktreeTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	caller, ok := inv.Caller.(*agent.Agent)
	if !ok || caller == nil {
		return tool.Result{}, errors.New("discard_worktree requires a calling agent")
	}
	var args struct {
		SubagentID string `json:"subagent_id"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil || args.SubagentID == "" {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "give subagent_id: the id of a settled subagent that ran in a worktree"}
	}
	env, err := workspace.EnvFor(ctx, t.r, inv)
	if err != nil {
		return tool.Result{}, err
	}
	req := WorktreeRequest{ChildID: args.SubagentID, ParentID: caller.ID()}
	rec, err := t.svc.FindWorktree(ctx, req)
	if err != nil {
		return tool.Result{}, err
	}
	st := t.svc.WorktreeState(ctx, *rec)
	display := &session.ToolDisplay{Locations: []session.ToolLocation{{Path: rec.Path}}}
	if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: DiscardWorktreeToolName, Kind: workspace.KindEdit,
		Title:   fmt.Sprintf("Discard the work of subagent %s (branch %s)", args.SubagentID, rec.Branch),
		Display: display, Subject: rec.Branch,
		Detail: fmt.Sprintf("Delete the %s and its branch `%s`, with every change in them.", st.Describe(), rec.Branch),
	}); err != nil {
		return workspace.Failed(err, display), nil
	}
	if _, err := t.svc.DiscardWorktree(ctx, req); err != nil {
		return workspace.Failed(err, display), nil
	}
	res := tool.TextResult(fmt.Sprintf("Discarded the work of subagent %s: its worktree %s and branch %s were removed.", args.SubagentID, rec.Path, rec.Branch),
		map[string]any{"subagentId": args.SubagentID, "branch": rec.Branch, "path": rec.Path})
	res.Display = display
	return res, nil
}
