package local

import (
	"context"
	"sync"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// AllowAll allows every call without asking (tools-only use, and tests of
// the tools themselves). It is never the gate of an editor session.
type AllowAll struct{}

// Authorize allows the call.
func (AllowAll) Authorize(context.Context, workspace.PermissionRequest) error { return nil }

// Scripted answers permission requests with Decide and records them.
// A nil Decide allows everything. Safe for concurrent use.
type Scripted struct {
	Decide func(workspace.PermissionRequest) error

	mu       sync.Mutex
	requests []workspace.PermissionRequest
}

// Authorize records req and returns Decide's answer.
func (s *Scripted) Authorize(ctx context.Context, req workspace.PermissionRequest) error {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	decide := s.Decide
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return &tool.Error{Code: workspace.CodePermissionCancelled, Message: "the permission request was cancelled", Err: err}
	}
	if decide == nil {
		return nil
	}
	return decide(req)
}

// Requests returns the requests seen so far, in order.
func (s *Scripted) Requests() []workspace.PermissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]workspace.PermissionRequest(nil), s.requests...)
}

// Reject returns the error a gate gives for a call the user rejected.
func Reject(req workspace.PermissionRequest) error {
	return &tool.Error{Code: workspace.CodePermissionRejected, Message: "the user rejected " + req.Tool + ": " + req.Title}
}
