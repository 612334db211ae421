package acp

// This file routes the ACP methods that became stable in 2026 after the Go
// SDK v0.13.0 was cut (session/delete; the initialize answer that
// advertises them), and defines their shapes as our own types, checked
// against the ACP v1 schema in tests (internal/acpschema).
//
// The SDK answers every method it does not know with -32601 and hands only
// "_"-prefixed names to ExtensionMethodHandler. The smallest hook that
// reaches such a method is in front of the SDK's reader: aliasReader
// renames a line's method to a private "_" name (keeping its id and params
// bytes as they were), the SDK dispatches that to HandleExtensionMethod,
// and the response goes out with the request's own id. Nothing else about
// the line changes, so the wire counter (wire.go) counts it as before.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Methods the SDK does not route.
const (
	MethodSessionDelete = "session/delete"
)

// aliasPrefix prefixes the private name a routed method gets on its way
// through the SDK. It is not advertised and not in Options.Extensions.
const aliasPrefix = "_" + MetaNamespace + "/protocol/"

// routedMethods are the methods aliasReader renames, with "initialize",
// whose answer carries capabilities the SDK's type cannot say.
var routedMethods = map[string]bool{
	acpsdk.AgentMethodInitialize:    true,
	MethodSessionDelete:             true,
	acpsdk.AgentMethodSessionNew:    true,
	acpsdk.AgentMethodSessionLoad:   true,
	acpsdk.AgentMethodSessionResume: true,
}

// SessionDeleteCapabilities is sessionCapabilities.delete ({} advertises
// session/delete).
type SessionDeleteCapabilities struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// DeleteSessionRequest is the params of session/delete.
type DeleteSessionRequest struct {
	SessionID string         `json:"sessionId"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// DeleteSessionResponse is the result of session/delete.
type DeleteSessionResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// routed handles a method aliasReader renamed; ok is false for any other.
func (s *Server) routed(ctx context.Context, method string, params json.RawMessage) (res any, ok bool, err error) {
	name, found := cutAlias(method)
	if !found {
		return nil, false, nil
	}
	switch name {
	case acpsdk.AgentMethodInitialize:
		res, err = s.initialize2026(ctx, params)
	case MethodSessionDelete:
		res, err = s.deleteSession(ctx, params)
	case acpsdk.AgentMethodSessionNew:
		var p acpsdk.NewSessionRequest
		client, derr := decodeLifecycle(params, &p)
		if derr != nil {
			return nil, true, derr
		}
		res, err = s.newSession(ctx, p, client)
	case acpsdk.AgentMethodSessionLoad:
		var p acpsdk.LoadSessionRequest
		client, derr := decodeLifecycle(params, &p)
		if derr != nil {
			return nil, true, derr
		}
		res, err = s.loadSession(ctx, p, client)
	case acpsdk.AgentMethodSessionResume:
		var p acpsdk.ResumeSessionRequest
		client, derr := decodeLifecycle(params, &p)
		if derr != nil {
			return nil, true, derr
		}
		res, err = s.resumeSession(ctx, p, client)
	default:
		return nil, true, acpsdk.NewMethodNotFound(name)
	}
	return res, true, err
}

func cutAlias(method string) (string, bool) {
	if len(method) <= len(aliasPrefix) || method[:len(aliasPrefix)] != aliasPrefix {
		return "", false
	}
	name := method[len(aliasPrefix):]
	return name, routedMethods[name]
}

// initialize2026 is initialize as the SDK would run it (decode, validate,
// Initialize) with the capabilities its types lack added to the answer.
func (s *Server) initialize2026(ctx context.Context, params json.RawMessage) (any, error) {
	var p acpsdk.InitializeRequest
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if err := p.Validate(); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	resp, err := s.Initialize(ctx, p)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	caps, _ := out["agentCapabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
		out["agentCapabilities"] = caps
	}
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	if sc == nil {
		sc = map[string]any{}
		caps["sessionCapabilities"] = sc
	}
	for k, v := range s.moreSessionCapabilities() {
		sc[k] = v
	}
	return out, nil
}

// moreSessionCapabilities are the sessionCapabilities the SDK's type has
// no field for.
func (s *Server) moreSessionCapabilities() map[string]any {
	m := map[string]any{}
	if s.opts.Stored != nil {
		if _, ok := s.opts.Stored.(Deleter); ok {
			m["delete"] = SessionDeleteCapabilities{}
		}
	}
	m["systemPrompt"] = SessionSystemPromptCapabilities{}
	return m
}

// aliasReader renames the method of each line naming a routed method to
// its private alias. Lines are passed through unchanged otherwise; one
// longer than maxLine is passed through as it comes (the SDK fails on it
// anyway).
type aliasReader struct {
	r io.Reader
	// raw takes the responses to our raw calls (rawcall.go) out of the
	// stream; nil: none.
	raw  *rawCalls
	buf  []byte
	out  []byte // ready to be read
	line []byte // the current incomplete line
	pass bool   // inside an oversized line
	err  error
}

func newAliasReader(r io.Reader, raw *rawCalls) *aliasReader {
	return &aliasReader{r: r, raw: raw, buf: make([]byte, 64<<10)}
}

func (a *aliasReader) Read(p []byte) (int, error) {
	for len(a.out) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		n, err := a.r.Read(a.buf)
		a.feed(a.buf[:n])
		if err != nil {
			// The last line has no newline: pass it on as it is.
			a.out = append(a.out, a.line...)
			a.line = a.line[:0]
			a.err = err
		}
	}
	n := copy(p, a.out)
	a.out = a.out[n:]
	if len(a.out) == 0 {
		a.out = a.out[:0:0]
	}
	return n, nil
}

func (a *aliasReader) feed(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if a.pass {
				a.out = append(a.out, data...)
			} else {
				a.line = append(a.line, data...)
				if len(a.line) >= maxLine {
					a.out = append(a.out, a.line...)
					a.line, a.pass = a.line[:0], true
				}
			}
			return
		}
		if a.pass {
			a.out = append(a.out, data[:i+1]...)
			a.pass = false
		} else {
			a.line = append(a.line, data[:i]...)
			if a.raw == nil || !a.raw.deliver(a.line) {
				a.out = append(append(a.out, aliasLine(a.line)...), '\n')
			}
			a.line = a.line[:0]
		}
		data = data[i+1:]
	}
}

// aliasLine returns line with a routed method renamed, else line itself.
func aliasLine(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"method"`)) || !bytes.Contains(line, []byte(`"session/`)) && !bytes.Contains(line, []byte(`"`+acpsdk.AgentMethodInitialize+`"`)) {
		return line
	}
	if bytes.Contains(line, []byte(`"`+acpsdk.AgentMethodSessionPrompt+`"`)) || bytes.Contains(line, []byte(`"session/update"`)) {
		return line // the busiest lines are never routed: skip decoding them
	}
	var m struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}
	if json.Unmarshal(line, &m) != nil || !routedMethods[m.Method] || len(m.ID) == 0 {
		return line
	}
	out := map[string]json.RawMessage{"jsonrpc": m.JSONRPC, "id": m.ID}
	name, _ := json.Marshal(aliasPrefix + m.Method)
	out["method"] = name
	if len(m.Params) > 0 {
		out["params"] = m.Params
	}
	if m.JSONRPC == nil {
		delete(out, "jsonrpc")
	}
	b, err := json.Marshal(out)
	if err != nil {
		return line
	}
	return b
}
