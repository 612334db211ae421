package scenarios

// This file gives scenarios a workspace: files written into the run's cwd
// before the agent starts, the client's fs / terminal capabilities (served
// by the scenario client on the real disk and with real processes),
// scripted answers to session/request_permission, session modes, and the
// transcript sections that show what was asked and what the files hold at
// the end.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/acp-agent/acp-agent/internal/syncbuf"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/transcript"
	"github.com/acp-agent/acp-agent/internal/gitrun"
)

// ClientCaps are the capabilities the scenario client advertises and
// serves.
type ClientCaps struct {
	FS, Terminal bool
	// Compaction announces clientCapabilities.session.compaction: the
	// agent then sends compaction_update instead of the think tool call.
	Compaction bool
	// Subagents announces clientCapabilities.subagents: ACP v1 subagent
	// sessions (subagent_update, session_message, child streams).
	Subagents bool
	// Elicitation announces clientCapabilities.elicitation.form: the
	// client answers elicitation/create from the prompt steps' answers.
	Elicitation bool
	// QuestionsBetweenPrompts announces _meta["acp-agent"]
	// .questionsBetweenPrompts: children's questions are asked at once,
	// also between prompts (never held for the next prompt).
	QuestionsBetweenPrompts bool
}

// WorkspaceFile is a file written into the cwd before the run.
type WorkspaceFile struct {
	Path, Content string
}

// OpSetMode switches a session's mode (session/set_mode).
const OpSetMode = "set_mode"

// Permission answers a prompt step may script: an option id the agent
// offers, or "cancelled".
const answerCancelled = "cancelled"

func (p parser) client(n *yaml.Node) (ClientCaps, error) {
	f, err := p.fields(n, "client", "fs", "terminal", "compaction", "subagents", "elicitation", "questions_between_prompts")
	if err != nil {
		return ClientCaps{}, err
	}
	var c ClientCaps
	if v, ok := f["fs"]; ok {
		if c.FS, err = p.boolean(v, "client.fs"); err != nil {
			return ClientCaps{}, err
		}
	}
	if v, ok := f["terminal"]; ok {
		if c.Terminal, err = p.boolean(v, "client.terminal"); err != nil {
			return ClientCaps{}, err
		}
	}
	if v, ok := f["compaction"]; ok {
		if c.Compaction, err = p.boolean(v, "client.compaction"); err != nil {
			return ClientCaps{}, err
		}
	}
	if v, ok := f["subagents"]; ok {
		if c.Subagents, err = p.boolean(v, "client.subagents"); err != nil {
			return ClientCaps{}, err
		}
	}
	if v, ok := f["elicitation"]; ok {
		if c.Elicitation, err = p.boolean(v, "client.elicitation"); err != nil {
			return ClientCaps{}, err
		}
	}
	if v, ok := f["questions_between_prompts"]; ok {
		if c.QuestionsBetweenPrompts, err = p.boolean(v, "client.questions_between_prompts"); err != nil {
			return ClientCaps{}, err
		}
	}
	return c, nil
}

func (p parser) files(n *yaml.Node) ([]WorkspaceFile, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "files", "must be a mapping of relative paths to contents")
	}
	var out []WorkspaceFile
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		where := "files." + k.Value
		clean := filepath.Clean(k.Value)
		if k.Value == "" || filepath.IsAbs(k.Value) || clean == ".." || strings.HasPrefix(clean, "../") {
			return nil, p.errf(k, where, "must be a relative path inside the cwd")
		}
		content, err := p.str(v, where)
		if err != nil {
			return nil, err
		}
		out = append(out, WorkspaceFile{Path: clean, Content: content})
	}
	return out, nil
}

func (p parser) answers(n *yaml.Node, where string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, where, "must be a list of option ids (allow_once, allow_always, reject_once, reject_always; the older allow-once, … still work) or cancelled")
	}
	var out []string
	for _, item := range n.Content {
		s, err := p.str(item, where)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// writeFiles writes the scenario's files into the cwd.
func (r *runner) writeFiles(ctx context.Context) error {
	for _, f := range r.sc.Files {
		if err := writeCwdFile(r.cwd, f.Path, f.Content); err != nil {
			return err
		}
	}
	if r.sc.Git {
		return initRepo(ctx, r.cwd)
	}
	return nil
}

// GitEnv pins what makes a commit's hash: identity and dates, and keeps
// the person's git configuration out of a run.
var GitEnv = []string{
	"GIT_AUTHOR_NAME=scenario", "GIT_AUTHOR_EMAIL=scenario@acp-agent.invalid",
	"GIT_COMMITTER_NAME=scenario", "GIT_COMMITTER_EMAIL=scenario@acp-agent.invalid",
	"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

// initRepo makes dir a repository on branch main with its files in one
// commit, through the agent's one git runner (internal/gitrun: no GIT_*
// of the environment the run was started from, no hook or filter).
func initRepo(ctx context.Context, dir string) error {
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"add", "--all"},
		{"commit", "--quiet", "--allow-empty", "-m", "scenario files"},
	} {
		cmd := gitrun.Command(ctx, "", dir, GitEnv, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// writeCwdFile writes content to rel under cwd, creating directories.
func writeCwdFile(cwd, rel, content string) error {
	path := filepath.Join(cwd, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o600)
}

// clientWorkspace is the scenario client's side of the workspace: the
// advertised capabilities, the scripted permission answers (a queue that
// prompt steps extend) and a log of what was asked.
type clientWorkspace struct {
	caps ClientCaps

	mu      sync.Mutex
	answers []string
	asked   []string
	// elicit are the scripted answers to elicitation/create
	// (protocol2026.go).
	elicit []string
	terms  map[string]*scenarioTerminal
	termN  int
}

func newClientWorkspace(caps ClientCaps) *clientWorkspace {
	return &clientWorkspace{caps: caps, terms: map[string]*scenarioTerminal{}}
}

// script appends answers for the permission requests to come.
func (w *clientWorkspace) script(answers []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers = append(w.answers, answers...)
}

// handle answers agent-to-client workspace requests; ok is false for other
// methods.
func (w *clientWorkspace) handle(ctx context.Context, req *jsonrpc2.Request) (res any, err error, ok bool) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	switch req.Method {
	case "session/request_permission":
		res, err = w.permission(params)
	case "fs/read_text_file":
		res, err = w.readFile(params)
	case "fs/write_text_file":
		res, err = w.writeFile(params)
	case "terminal/create", "terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release":
		res, err = w.terminal(ctx, req.Method, params)
	case "elicitation/create":
		if !w.caps.Elicitation {
			return nil, nil, false
		}
		res, err = w.elicitation(params)
	default:
		return nil, nil, false
	}
	return res, err, true
}

func (w *clientWorkspace) permission(params json.RawMessage) (any, error) {
	var p struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
		} `json:"options"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	w.mu.Lock()
	answer := answerCancelled
	if len(w.answers) > 0 {
		answer, w.answers = w.answers[0], w.answers[1:]
	}
	w.asked = append(w.asked, fmt.Sprintf("%s %q -> %s", p.ToolCall.ToolCallID, p.ToolCall.Title, answer))
	w.mu.Unlock()
	if answer == answerCancelled {
		return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
	}
	if !slices.ContainsFunc(p.Options, func(o struct {
		OptionID string `json:"optionId"`
	}) bool {
		return o.OptionID == answer
	}) {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "the scripted answer " + answer + " is not an offered option"}
	}
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": answer}}, nil
}

func (w *clientWorkspace) readFile(params json.RawMessage) (any, error) {
	if !w.caps.FS {
		return nil, methodNotFound("fs/read_text_file")
	}
	var p struct {
		Path  string `json:"path"`
		Line  int    `json:"line"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	b, err := os.ReadFile(p.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &jsonrpc2.Error{Code: -32002, Message: "Resource not found: " + p.Path}
	}
	if err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
	}
	text := string(b)
	if p.Line > 0 || p.Limit > 0 {
		lines := strings.SplitAfter(text, "\n")
		start := max(p.Line-1, 0)
		end := len(lines)
		if p.Limit > 0 {
			end = min(start+p.Limit, end)
		}
		if start > end {
			start = end
		}
		text = strings.Join(lines[start:end], "")
	}
	return map[string]any{"content": text}, nil
}

func (w *clientWorkspace) writeFile(params json.RawMessage) (any, error) {
	if !w.caps.FS {
		return nil, methodNotFound("fs/write_text_file")
	}
	var p struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o700); err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
	}
	if err := os.WriteFile(p.Path, []byte(p.Content), 0o600); err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
	}
	return map[string]any{}, nil
}

// scenarioTerminal is a command the client runs for terminal/create.
type scenarioTerminal struct {
	cmd  *exec.Cmd
	out  syncbuf.Buffer
	done chan struct{}
}

// terminalWaitLimit bounds a scenario command (scenarios run short,
// deterministic commands).
const terminalWaitLimit = 30 * time.Second

func (w *clientWorkspace) terminal(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if !w.caps.Terminal {
		return nil, methodNotFound(method)
	}
	var p struct {
		TerminalID string   `json:"terminalId"`
		Command    string   `json:"command"`
		Args       []string `json:"args"`
		Cwd        string   `json:"cwd"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	if method == "terminal/create" {
		t := &scenarioTerminal{cmd: exec.Command(p.Command, p.Args...), done: make(chan struct{})}
		t.cmd.Dir = p.Cwd
		t.cmd.Stdout, t.cmd.Stderr = &t.out, &t.out
		if err := t.cmd.Start(); err != nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
		}
		go func() { _ = t.cmd.Wait(); close(t.done) }()
		w.mu.Lock()
		w.termN++
		id := fmt.Sprintf("terminal-%d", w.termN)
		w.terms[id] = t
		w.mu.Unlock()
		return map[string]any{"terminalId": id}, nil
	}
	w.mu.Lock()
	t, ok := w.terms[p.TerminalID]
	w.mu.Unlock()
	if !ok {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "unknown terminal " + p.TerminalID}
	}
	exit := func() map[string]any {
		st := t.cmd.ProcessState
		if st == nil {
			return nil
		}
		return map[string]any{"exitCode": st.ExitCode()}
	}
	switch method {
	case "terminal/wait_for_exit":
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "cancelled"}
		case <-time.After(terminalWaitLimit):
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "the command did not exit"}
		}
		return exit(), nil
	case "terminal/output":
		out := map[string]any{"output": t.out.String(), "truncated": false}
		select {
		case <-t.done:
			out["exitStatus"] = exit()
		default:
		}
		return out, nil
	case "terminal/kill":
		_ = t.cmd.Process.Kill()
		return map[string]any{}, nil
	default: // terminal/release
		_ = t.cmd.Process.Kill()
		<-t.done
		w.mu.Lock()
		delete(w.terms, p.TerminalID)
		w.mu.Unlock()
		return map[string]any{}, nil
	}
}

// stop kills and reaps every terminal still held (a run that ended early).
func (w *clientWorkspace) stop() {
	w.mu.Lock()
	terms := w.terms
	w.terms = map[string]*scenarioTerminal{}
	w.mu.Unlock()
	for _, t := range terms {
		_ = t.cmd.Process.Kill()
		<-t.done
	}
}

func methodNotFound(method string) error {
	return &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + method}
}

// workspaceSection renders what the workspace saw: the permission
// requests with their answers and the final contents of the cwd. Empty for
// scenarios that use no workspace (their transcripts stay as they were).
func (r *runner) workspaceSection() ([]byte, error) {
	w := r.workspace
	w.mu.Lock()
	asked := slices.Clone(w.asked)
	w.mu.Unlock()
	var files []string
	err := filepath.WalkDir(r.cwd, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && r.sc.Git {
			// A git scenario's repository (and each worktree's link to
			// it): git's own files, not the workspace's.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(asked) == 0 && len(files) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	b.WriteString("\nPermission requests\n")
	if len(asked) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, a := range asked {
		b.WriteString("  " + a + "\n")
	}
	b.WriteString("\nWorkspace files\n")
	slices.Sort(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(r.cwd, f)
		fmt.Fprintf(&b, "  %s:\n", rel)
		transcript.WriteIndented(&b, "    | ", string(data))
	}
	return b.Bytes(), nil
}
