package workspacetest

import (
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// Caller is a tool caller whose session id is the string itself.
type Caller string

// SessionID returns the session id.
func (c Caller) SessionID() string { return string(c) }

// Text is the result's text blocks joined by newlines.
func Text(r tool.Result) string { return session.JoinText(r.Content, "\n") }

// ErrCode is the result's error code, "" when it did not fail.
func ErrCode(r tool.Result) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}
