package acp

// This file defines the ask_user tool: the model asks the person a
// structured question (one of a few choices, or a short form) through
// elicitation/create, in form mode, tied to the session and the tool call.
// It is offered to the top-level sessions of a client that advertised
// clientCapabilities.elicitation.form, and only while that client is
// connected; the composition offers it to children too (AskUserTool). A
// child's question is asked on its own session to a client with the
// subagents capability, else on its root session under the held-question
// rules (held_questions.go: held while no prompt of the root runs, asked
// again at its next prompt, refused at the deadline). The question is the
// call's arguments and the answer its result, both in the session's log,
// so a replay shows them as they were.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// AskUserTool is the name of the elicitation tool.
const AskUserTool = "ask_user"

// MethodElicitationCreate is the client method of a question.
const MethodElicitationCreate = "elicitation/create"

// Limits of a question.
const (
	maxChoices        = 10
	maxFields         = 8
	maxQuestionLength = 2000
)

// Codes of ask_user failures.
const (
	CodeElicitationUnavailable = "ELICITATION_UNAVAILABLE"
	CodeElicitationFailed      = "ELICITATION_FAILED"
)

// CreateElicitationRequest is the params of elicitation/create in form
// mode, scoped to a session and one of its tool calls.
type CreateElicitationRequest struct {
	SessionID       string            `json:"sessionId"`
	ToolCallID      string            `json:"toolCallId,omitempty"`
	Mode            string            `json:"mode"`
	Message         string            `json:"message"`
	RequestedSchema ElicitationSchema `json:"requestedSchema"`
	Meta            map[string]any    `json:"_meta,omitempty"`
}

// ElicitationSchema is the form asked for: an object of flat properties.
type ElicitationSchema struct {
	Type       string                         `json:"type"`
	Title      string                         `json:"title,omitempty"`
	Properties map[string]ElicitationProperty `json:"properties"`
	Required   []string                       `json:"required,omitempty"`
}

// ElicitationProperty is one field of the form: a string (free text, or
// one of OneOf), a number, an integer or a boolean.
type ElicitationProperty struct {
	Type        string       `json:"type"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	OneOf       []EnumOption `json:"oneOf,omitempty"`
	MaxLength   *int         `json:"maxLength,omitempty"`
}

// EnumOption is one choice of a string field.
type EnumOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// CreateElicitationResponse is the person's answer.
type CreateElicitationResponse struct {
	Action  string         `json:"action"` // accept, decline, cancel (others: future)
	Content map[string]any `json:"content,omitempty"`
}

// askUserArgs are the tool's arguments.
type askUserArgs struct {
	Question string     `json:"question"`
	Choices  []string   `json:"choices,omitempty"`
	Fields   []askField `json:"fields,omitempty"`
}

type askField struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"` // string (default), number, integer, boolean
	Optional    bool   `json:"optional,omitempty"`
}

// askUser is the tool; one per session agent.
type askUser struct{ s *Server }

var (
	_ tool.Tool = askUser{}
	_ Titler    = askUser{}
)

func (askUser) Kind() string { return "other" }

func (askUser) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: AskUserTool,
		Description: "Ask the person a question and wait for the answer. Use it only when you cannot go on well without their " +
			"decision or a fact only they know; do not ask what you can find out yourself. Give `choices` for a pick among a few " +
			"options, or `fields` for a short form; with neither, the person answers in one line of text. They may decline.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"question":{"type":"string","description":"The question, complete and self-contained."},` +
			`"choices":{"type":"array","items":{"type":"string"},"maxItems":10,"description":"The options the person picks one of."},` +
			`"fields":{"type":"array","maxItems":8,"items":{"type":"object","properties":{` +
			`"name":{"type":"string","description":"Key of the answer (letters, digits, _)."},` +
			`"description":{"type":"string"},` +
			`"type":{"type":"string","enum":["string","number","integer","boolean"]},` +
			`"optional":{"type":"boolean"}},"required":["name"]},"description":"A short form; each field is one answer."}` +
			`},"required":["question"]}`),
	}
}

func (askUser) Title(args json.RawMessage) string {
	var a askUserArgs
	if json.Unmarshal(args, &a) != nil || strings.TrimSpace(a.Question) == "" {
		return "Ask the user"
	}
	q := strings.Join(strings.Fields(a.Question), " ")
	if r := []rune(q); len(r) > 80 {
		q = string(r[:79]) + "…"
	}
	return "Ask: " + q
}

func (t askUser) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var a askUserArgs
	if err := json.Unmarshal(inv.Arguments, &a); err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "invalid arguments: " + err.Error()}
	}
	req, err := elicitationRequest(a)
	if err != nil {
		return tool.Result{}, err
	}
	sid := ""
	if inv.Caller != nil {
		sid = inv.Caller.SessionID()
	}
	if _, child := t.s.liveChild(sid); child {
		return t.s.elicitForChild(ctx, sid, inv.CallID, a, req)
	}
	if err := t.s.canElicit(sid); err != nil {
		return tool.Result{}, err
	}
	req.SessionID, req.ToolCallID = sid, inv.CallID
	// The question's tool_call is on the wire before the question.
	if err := t.s.Shown(ctx, sid); err != nil {
		return tool.Result{}, err
	}
	raw, err := t.s.callRaw(ctx, MethodElicitationCreate, req)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, err
		}
		return tool.Result{}, &tool.Error{Code: CodeElicitationFailed, Message: "the question could not be asked: " + err.Error(), Err: err}
	}
	var resp CreateElicitationResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return tool.Result{}, &tool.Error{Code: CodeElicitationFailed, Message: "the client's answer is not an elicitation result: " + err.Error()}
	}
	return answerResult(a, resp), nil
}

// canElicit refuses a question the client cannot be asked now: a session
// not bound to this connection, a client that did not advertise form
// elicitation, or no connection. (A subagent's question goes to its root:
// elicitForChild.)
func (s *Server) canElicit(sid string) error {
	b := s.boundSession(sid)
	if b == nil || b.readOnly || !s.connected() {
		return &tool.Error{Code: CodeElicitationUnavailable, Message: "ask_user is not available now: no editor is attached to this session"}
	}
	if !s.elicitsForms() {
		return &tool.Error{Code: CodeElicitationUnavailable, Message: "ask_user is not available: the editor does not support questions (elicitation)"}
	}
	return nil
}

// elicitsForms reports whether the client advertised form elicitation.
func (s *Server) elicitsForms() bool {
	c := s.ClientCapabilities()
	return c.Elicitation != nil && c.Elicitation.Form != nil
}

// elicitationRequest checks a question and builds its form.
func elicitationRequest(a askUserArgs) (CreateElicitationRequest, error) {
	bad := func(format string, args ...any) error {
		return &tool.Error{Code: tool.CodeInvalidArgs, Message: fmt.Sprintf(format, args...)}
	}
	q := strings.TrimSpace(a.Question)
	switch {
	case q == "":
		return CreateElicitationRequest{}, bad("question is empty")
	case len(q) > maxQuestionLength:
		return CreateElicitationRequest{}, bad("question is longer than %d bytes", maxQuestionLength)
	case len(a.Choices) > 0 && len(a.Fields) > 0:
		return CreateElicitationRequest{}, bad("give either choices or fields, not both")
	case len(a.Choices) == 1 || len(a.Choices) > maxChoices:
		return CreateElicitationRequest{}, bad("choices needs 2 to %d options", maxChoices)
	case len(a.Fields) > maxFields:
		return CreateElicitationRequest{}, bad("fields has more than %d entries", maxFields)
	}
	schema := ElicitationSchema{Type: "object", Properties: map[string]ElicitationProperty{}}
	switch {
	case len(a.Choices) > 0:
		p := ElicitationProperty{Type: "string", Title: "Answer"}
		for _, c := range a.Choices {
			c = strings.TrimSpace(c)
			if c == "" {
				return CreateElicitationRequest{}, bad("a choice is empty")
			}
			for _, o := range p.OneOf {
				if o.Const == c {
					return CreateElicitationRequest{}, bad("choice %q is given twice", c)
				}
			}
			p.OneOf = append(p.OneOf, EnumOption{Const: c, Title: c})
		}
		schema.Properties["answer"] = p
		schema.Required = []string{"answer"}
	case len(a.Fields) > 0:
		for _, f := range a.Fields {
			if !fieldName(f.Name) {
				return CreateElicitationRequest{}, bad("field name %q must be 1 to 64 letters, digits or _", f.Name)
			}
			if _, dup := schema.Properties[f.Name]; dup {
				return CreateElicitationRequest{}, bad("field %q is given twice", f.Name)
			}
			typ := f.Type
			switch typ {
			case "":
				typ = "string"
			case "string", "number", "integer", "boolean":
			default:
				return CreateElicitationRequest{}, bad("field %q has type %q (string, number, integer or boolean)", f.Name, f.Type)
			}
			schema.Properties[f.Name] = ElicitationProperty{Type: typ, Title: f.Name, Description: f.Description}
			if !f.Optional {
				schema.Required = append(schema.Required, f.Name)
			}
		}
	default:
		n := 500
		schema.Properties["answer"] = ElicitationProperty{Type: "string", Title: "Answer", MaxLength: &n}
		schema.Required = []string{"answer"}
	}
	return CreateElicitationRequest{Mode: "form", Message: q, RequestedSchema: schema}, nil
}

func fieldName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// answerResult words the person's answer for the model; Raw keeps it as
// the client sent it.
func answerResult(a askUserArgs, r CreateElicitationResponse) tool.Result {
	raw := map[string]any{"action": r.Action}
	if r.Content != nil {
		raw["content"] = r.Content
	}
	switch r.Action {
	case "accept":
		if len(a.Fields) == 0 {
			if v, ok := r.Content["answer"]; ok {
				return tool.TextResult(fmt.Sprintf("The person answered: %v", v), raw)
			}
			return tool.TextResult("The person accepted without an answer.", raw)
		}
		keys := make([]string, 0, len(r.Content))
		for k := range r.Content {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("The person answered:")
		for _, k := range keys {
			fmt.Fprintf(&b, "\n%s: %v", k, r.Content[k])
		}
		if len(keys) == 0 {
			b.WriteString(" (no fields filled in)")
		}
		return tool.TextResult(b.String(), raw)
	case "decline":
		return tool.TextResult("The person declined to answer. Go on without it, or explain why you need it.", raw)
	case "cancel":
		return tool.TextResult("The person dismissed the question without answering.", raw)
	}
	return tool.TextResult(fmt.Sprintf("The editor answered the question with %q, which this agent does not understand; treat it as no answer.", r.Action), raw)
}

// sessionTools are the tools this connection adds to a top-level session's
// agent besides its MCP tools.
func (s *Server) sessionTools(sess *session.Session) []tool.Tool {
	if sess.Header().Origin == session.OriginSubagent || !s.elicitsForms() {
		return nil
	}
	return []tool.Tool{askUser{s: s}}
}

// CodeElicitationRefused is ask_user's failure when nobody answered a
// subagent's question within the deadline (Options.QuestionTimeout).
const CodeElicitationRefused = "ELICITATION_REFUSED"

// AskUserTool is the ask_user tool for the composition to give children
// (subagent sessions), nil when the client did not advertise form
// elicitation. A child's question follows the held-question rules.
func (s *Server) AskUserTool() tool.Tool {
	if s == nil || !s.elicitsForms() {
		return nil
	}
	return askUser{s: s}
}

// childQuestionMeta is _meta[MetaSubagent] of a child's question asked on
// its root session: whose it is. Its field order is fixed: the written
// request is matched by its prefix (askWatch).
type childQuestionMeta struct {
	ChildSessionID string `json:"childSessionId"`
	ToolCallID     string `json:"toolCallId"`
	Label          string `json:"label,omitempty"`
}

// elicitForChild asks child's question: on the child's own session when
// the client follows it (the subagents capability), else on its root
// session, held while no prompt of the root runs and refused once nobody
// answered it within the deadline.
func (s *Server) elicitForChild(ctx context.Context, child, callID string, a askUserArgs, req CreateElicitationRequest) (tool.Result, error) {
	unavailable := func(why string) (tool.Result, error) {
		return tool.Result{}, &tool.Error{Code: CodeElicitationUnavailable, Message: "ask_user is not available now: " + why +
			". Decide with what you have and say in your final answer what you assumed, or end with the question so the parent can ask it."}
	}
	h, err := s.header(ctx, child)
	if err != nil {
		return tool.Result{}, err
	}
	root, err := s.rootOf(ctx, h)
	if err != nil {
		return tool.Result{}, err
	}
	b := s.boundSession(root.ID)
	switch {
	case b == nil || b.readOnly || !s.connected():
		return unavailable("no editor is attached to the session that started this subagent")
	case !s.elicitsForms():
		return unavailable("the editor does not support questions (elicitation)")
	}
	label := s.childRecordOf(root.ID, child).Label
	if c := s.announcedChild(child); c != nil {
		// The client follows the child: asked at once, on its session.
		s.queue(c, item{call: func() { s.childState(c, RequiresAction()) }})
		done := make(chan struct{})
		s.queue(c, item{barrier: done})
		select {
		case <-done:
		case <-ctx.Done():
			return tool.Result{}, context.Cause(ctx)
		}
		req.SessionID, req.ToolCallID = child, callID
		raw, err := s.callRaw(ctx, MethodElicitationCreate, req)
		s.queue(c, item{call: func() { s.childState(c, Running()) }})
		return elicited(ctx, a, raw, err)
	}
	held := s.questions()
	q := &HeldQuestion{Root: root.ID, Child: child, Label: label, Title: req.Message, Ask: true}
	dctx, stop := held.Deadline(ctx)
	defer stop()
	heldFirst := !s.questionsAnytime()
	if heldFirst {
		if err := held.Hold(dctx, q); err != nil {
			switch {
			case Expired(dctx):
				return tool.Result{}, &tool.Error{Code: CodeElicitationRefused, Message: "the question was refused: " + s.noteExpired(b, q)}
			case errors.Is(err, ErrQuestionDropped):
				return unavailable("the editor session that started this subagent was closed")
			}
			return tool.Result{}, err
		}
		defer q.Asked()
	}
	// Asked on the root session, which has not seen the child's call: no
	// toolCallId, the child named in the message and in _meta.
	req.SessionID, req.ToolCallID = root.ID, ""
	if label != "" {
		req.Message = "[" + label + "] " + req.Message
	}
	meta := childQuestionMeta{ChildSessionID: child, ToolCallID: callID, Label: label}
	req.Meta = map[string]any{MetaSubagent: meta}
	if heldFirst {
		// Told once the request is written (the prompt that released it
		// starts its turn then).
		key, _ := json.Marshal(childQuestionMeta{ChildSessionID: child, ToolCallID: callID})
		defer s.asking.watchKey(q, askKey{method: []byte(`"method":"` + MethodElicitationCreate + `"`), key: key[:len(key)-1]})()
	}
	raw, err := s.callRaw(dctx, MethodElicitationCreate, req)
	if Expired(dctx) {
		return tool.Result{}, &tool.Error{Code: CodeElicitationRefused, Message: "the question was refused: " + s.noteExpired(b, q)}
	}
	return elicited(ctx, a, raw, err)
}

// elicited maps the client's answer to an elicitation (or its failure) to
// the tool's result.
func elicited(ctx context.Context, a askUserArgs, raw json.RawMessage, err error) (tool.Result, error) {
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, err
		}
		return tool.Result{}, &tool.Error{Code: CodeElicitationFailed, Message: "the question could not be asked: " + err.Error(), Err: err}
	}
	var resp CreateElicitationResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return tool.Result{}, &tool.Error{Code: CodeElicitationFailed, Message: "the client's answer is not an elicitation result: " + err.Error()}
	}
	return answerResult(a, resp), nil
}
