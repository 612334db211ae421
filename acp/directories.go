package acp

// This file defines a session's additional workspace roots (ACP
// additionalDirectories on session/new, load and resume): directories
// outside the cwd that are inside the boundary all the same. The tools
// open their paths as they open the cwd's (workspace.ResolvePathIn), the
// permission gate and the settings rules treat them as inside, a
// sandboxed command may write there, and the system prompt's environment
// section lists them (SessionRoots). session/new records them in the
// session header; a load or resume naming other roots records its list
// as an ignorable session/additionalDirectories event, which is what the
// session has from then on, also after a restart; the model, whose system
// prompt is recorded once, is told of the change with its next turn.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TypeSessionDirectories is the log event recording the additional roots
// a load or resume gave a session (SessionDirectoriesData).
const TypeSessionDirectories = "session/additionalDirectories"

// SessionDirectoriesData is the payload of TypeSessionDirectories.
type SessionDirectoriesData struct {
	Directories []string `json:"directories"`
}

// cleanDirectories checks a request's additionalDirectories: each an
// absolute path naming an existing directory. It returns them cleaned,
// without duplicates, in the order given.
func cleanDirectories(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) || strings.ContainsRune(d, 0) {
			return nil, errorf(CodeInvalidParams, "additionalDirectories: %q is not an absolute path", d)
		}
		d = filepath.Clean(d)
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			return nil, errorf(CodeInvalidParams, "additionalDirectories: %s is not a directory this agent can open", d)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// checkNoDirectories refuses additionalDirectories on session/fork, which
// takes its roots from nowhere yet.
func checkNoDirectories(dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	return errorf(CodeInvalidParams, "additionalDirectories is not supported on session/fork (%s): "+
		"fork the session, then resume it with them", strings.Join(dirs, ", "))
}

// rootsOf returns the additional roots of bound session b: the last list a
// load or resume recorded, else its header's.
func (s *Server) rootsOf(b *bound) []string {
	s.rootsMu.Lock()
	defer s.rootsMu.Unlock()
	if r, ok := s.roots[b.id]; ok {
		return r
	}
	if b.sess == nil {
		return nil
	}
	events, err := b.sess.Events()
	if err != nil {
		// Not cached: asked again next time. The header's list stands.
		s.log.Warn("read the additional directories from the log", "session_id", b.id, "err", err)
		return b.sess.Header().AdditionalDirectories.List()
	}
	roots := rootsFromLog(b.sess.Header(), events)
	if s.roots == nil {
		s.roots = map[string][]string{}
	}
	s.roots[b.id] = roots
	return roots
}

// rootsFromLog is the roots a session's log gives it: the last recorded
// list, else its header's.
func rootsFromLog(h session.Header, events []session.Event) []string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeSessionDirectories {
			continue
		}
		if d, err := session.DecodeData[SessionDirectoriesData](events[i]); err == nil {
			return d.Directories
		}
	}
	return h.AdditionalDirectories.List()
}

// binding is what a session/new, load or resume asks of the session it
// binds beyond the SDK's fields: additional roots (nil or empty: keep) and
// the client's system prompt (nil: keep).
type binding struct {
	dirs   []string
	client *string
}

// recordBinding records, before sess's agent is built, the roots and the
// client system prompt a request named where they differ from what its
// log holds, and rewrites its recorded system prompt to match
// (Options.RewriteSystemPrompt), so the agent built next starts from them.
func (s *Server) recordBinding(ctx context.Context, sess *session.Session, bind binding) error {
	if len(bind.dirs) == 0 && bind.client == nil {
		return nil
	}
	h := sess.Header()
	events, err := sess.Events()
	if err != nil {
		return err
	}
	roots, client := rootsFromLog(h, events), clientPromptFromLog(events)
	var last int64 = -1
	if len(bind.dirs) > 0 && !slices.Equal(roots, bind.dirs) {
		ev, err := sess.Append(TypeSessionDirectories, SessionDirectoriesData{Directories: bind.dirs}, session.Ignorable())
		if err != nil {
			return err
		}
		roots, last = bind.dirs, ev.Seq
	}
	if bind.client != nil && *bind.client != client {
		ev, err := sess.Append(TypeClientSystemPrompt, ClientSystemPromptData{Mode: "append", Text: *bind.client}, session.Ignorable())
		if err != nil {
			return err
		}
		client, last = *bind.client, ev.Seq
	}
	if last < 0 {
		return nil
	}
	if rewrite := s.opts.RewriteSystemPrompt; rewrite != nil && h.SeedLength <= len(events) {
		text, ok, err := session.RecordedSystemPrompt(events[h.SeedLength:])
		if err == nil && ok {
			if next, changed := rewrite(text, roots, client); changed && next != text {
				ev, err := sess.Append(session.TypeSystemPrompt, session.SystemPromptData{Text: next})
				if err != nil {
					return err
				}
				last = ev.Seq
			}
		}
	}
	return s.makeDurable(ctx, sess.ID(), last)
}

// setRoots gives b the roots a load or resume named (nil or empty: keep
// what it has), recorded durably first when they differ.
func (s *Server) setRoots(ctx context.Context, b *bound, dirs []string) error {
	cur := s.rootsOf(b)
	if len(dirs) == 0 || b.readOnly || b.sess == nil || slices.Equal(cur, dirs) {
		return nil
	}
	ev, err := b.sess.Append(TypeSessionDirectories, SessionDirectoriesData{Directories: dirs}, session.Ignorable())
	if err == nil {
		err = s.makeDurable(ctx, b.id, ev.Seq)
	}
	if err != nil {
		return fmt.Errorf("record the additional directories of session %s: %w", b.id, err)
	}
	s.rootsMu.Lock()
	if s.roots == nil {
		s.roots = map[string][]string{}
	}
	s.roots[b.id] = dirs
	s.rootsMu.Unlock()
	// The recorded system prompt keeps the roots it was assembled with
	// (the model sees the prompt it saw): the next turn is told of the
	// change instead.
	if b.agent != nil {
		note := session.Message{ID: b.sess.NewID(), Role: session.RoleUser, Source: session.Source{Kind: session.SourcePlugin},
			Content: []session.Block{{Type: session.BlockText, Text: rootsNote(dirs)}}}
		if _, err := b.agent.Inject(note); err != nil {
			s.log.Warn("tell the model of new additional directories", "session_id", b.id, "err", err)
		}
	}
	return nil
}

// rootsNote tells the model the session's additional roots changed.
func rootsNote(dirs []string) string {
	return "[The session's additional directories are now: " + strings.Join(dirs, ", ") +
		". They replace any listed in the environment section; you may work in them as in the working directory.]"
}

// forgetRoots drops the cached roots of a released session.
func (s *Server) forgetRoots(id string) {
	s.rootsMu.Lock()
	delete(s.roots, id)
	delete(s.sandboxes, id)
	s.rootsMu.Unlock()
}

// SessionRoots returns the additional roots in force for session id: its
// root session's, when that is bound to this connection, else the ones
// its root's header records (nil when the session is unknown).
func (s *Server) SessionRoots(ctx context.Context, id string) []string {
	h, err := s.header(ctx, id)
	if err != nil {
		return nil
	}
	if h.Origin == session.OriginSubagent {
		root, err := s.rootOf(ctx, h)
		if err != nil {
			return nil
		}
		h = root
	}
	if b := s.boundSession(h.ID); b != nil && !b.readOnly {
		return s.rootsOf(b)
	}
	return h.AdditionalDirectories.List()
}
