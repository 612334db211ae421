package scenarios

// This file holds the scenario steps and client answers of the protocol
// additions of 2026 (issue 54): the session/delete step,
// $/cancel_request naming an outstanding prompt, additional directories on
// session/new, and the client's answers to elicitation/create.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Step operations of the 2026 protocol additions.
const (
	OpDeleteSession = "delete_session"
	OpCancelRequest = "cancel_request"
)

// codeRequestCancelled is JSON-RPC's (ACP's) "request cancelled".
const codeRequestCancelled = -32800

// dirNames decodes new_session's additional_directories: plain names.
func (p parser) dirNames(n *yaml.Node, where string) ([]string, error) {
	names, err := p.answers(n, where)
	if err != nil {
		return nil, err
	}
	for _, s := range names {
		if s == "" || strings.ContainsAny(s, `/\`) || strings.Trim(s, ".") == "" {
			return nil, p.errf(n, where, "%q must be a plain directory name (made beside the cwd as $CWD-<name>)", s)
		}
	}
	return names, nil
}

// makeDirs makes the additional directories of a new_session step beside
// the cwd ($CWD-<name>, so recordings name them through $CWD) and returns
// their absolute paths.
func (r *runner) makeDirs(names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		d := r.cwd + "-" + n
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// step2026 performs a delete_session or cancel_request step.
func (r *runner) step2026(ctx context.Context, st Step, res stepResult) (stepResult, error) {
	c := r.inst.client
	switch st.Op {
	case OpDeleteSession:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		if _, err := c.call(ctx, "session/delete", map[string]any{"sessionId": id}); err != nil {
			return res, err
		}
		res.Detail = "deleted session " + id
	case OpCancelRequest:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		c.mu.Lock()
		ps := c.pending[id]
		c.mu.Unlock()
		if len(ps) == 0 {
			return res, errors.New("no prompt is outstanding for this session to cancel")
		}
		reqID := ps[len(ps)-1].id
		if err := c.notify(ctx, "$/cancel_request", map[string]any{"requestId": reqID}); err != nil {
			return res, err
		}
		res.Detail = "$/cancel_request sent for the session's last prompt"
	}
	return res, nil
}

// scriptAnswers appends answers for the elicitation questions to come.
func (w *clientWorkspace) scriptAnswers(answers []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.elicit = append(w.elicit, answers...)
}

// elicitation answers one elicitation/create from the script: "decline",
// "cancel", or the text accepted as the form's "answer" (a question found
// with no answer left is cancelled). The question is logged with the
// permission requests.
func (w *clientWorkspace) elicitation(params json.RawMessage) (any, error) {
	var p struct {
		Message    string `json:"message"`
		ToolCallID string `json:"toolCallId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	answer := "cancel"
	if len(w.elicit) > 0 {
		answer, w.elicit = w.elicit[0], w.elicit[1:]
	}
	w.asked = append(w.asked, fmt.Sprintf("question %s %q -> %s", p.ToolCallID, p.Message, answer))
	switch answer {
	case "decline", "cancel":
		return map[string]any{"action": answer}, nil
	}
	return map[string]any{"action": "accept", "content": map[string]any{"answer": answer}}, nil
}
