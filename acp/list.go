package acp

// This file defines session/list: stored sessions, newest first, with a
// cwd filter, a parent filter (a session's subagent children), titles and
// opaque keyset cursors.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// cursor is the position after which the next page starts: the last row
// of the previous page in (updatedAt desc, id asc) order. Keyset cursors
// stay valid while sessions are created or updated between pages.
type cursor struct {
	UpdatedAt int64  `json:"u"`
	ID        string `json:"i"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" {
		return cursor{}, errorf(CodeInvalidCursor, "invalid cursor %q: pass back a nextCursor from an earlier session/list", s)
	}
	return c, nil
}

// after reports whether row r comes after position c.
func (c cursor) after(r StoredSession) bool {
	if r.UpdatedAt != c.UpdatedAt {
		return r.UpdatedAt < c.UpdatedAt
	}
	return r.Header.ID > c.ID
}

// ListSessions lists stored top-level sessions (children too when
// _meta["acp-agent/includeChildren"] is true; only the subagent children
// of session P when _meta["acp-agent/parentSession"] is P), newest first,
// optionally only those whose cwd equals the requested one.
func (s *Server) ListSessions(ctx context.Context, p acpsdk.ListSessionsRequest) (resp acpsdk.ListSessionsResponse, err error) {
	defer s.recoverTo("session/list", &err)
	includeChildren, _ := p.Meta[MetaIncludeChildren].(bool)
	parent, err := parentFilter(p.Meta)
	if err != nil {
		return resp, toRequestError(err)
	}
	var cwd string
	if p.Cwd != nil {
		if err := checkCwd(*p.Cwd); err != nil {
			return resp, toRequestError(err)
		}
		cwd = filepath.Clean(*p.Cwd)
	}
	var from *cursor
	if p.Cursor != nil {
		c, err := decodeCursor(*p.Cursor)
		if err != nil {
			return resp, toRequestError(err)
		}
		from = &c
	}
	rows, err := s.storedRows(ctx)
	if err != nil {
		return resp, toRequestError(fmt.Errorf("list sessions: %w", err))
	}
	rows = slices.DeleteFunc(rows, func(r StoredSession) bool {
		child := r.Header.Origin == session.OriginSubagent
		if parent != "" && (!child || r.Header.ParentSession != parent) {
			return true
		}
		if child && !includeChildren && parent == "" {
			return true
		}
		if cwd != "" && filepath.Clean(r.Header.Cwd) != cwd {
			return true
		}
		return from != nil && !from.after(r)
	})
	slices.SortFunc(rows, func(a, b StoredSession) int {
		if a.UpdatedAt != b.UpdatedAt {
			if a.UpdatedAt > b.UpdatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Header.ID, b.Header.ID)
	})
	if len(rows) > s.opts.PageSize {
		rows = rows[:s.opts.PageSize]
		last := rows[len(rows)-1]
		resp.NextCursor = acpsdk.Ptr(cursor{UpdatedAt: last.UpdatedAt, ID: last.Header.ID}.encode())
	}
	resp.Sessions = make([]acpsdk.SessionInfo, 0, len(rows))
	for _, r := range rows {
		info := acpsdk.SessionInfo{
			SessionId: acpsdk.SessionId(r.Header.ID),
			Cwd:       r.Header.Cwd,
			UpdatedAt: acpsdk.Ptr(isoTime(r.UpdatedAt)),
		}
		t, damage := s.titleOf(ctx, r)
		if t != "" {
			info.Title = acpsdk.Ptr(t)
		}
		if r.Header.ParentSession != "" {
			info.Meta = map[string]any{MetaParentSession: r.Header.ParentSession}
		}
		if damage != "" {
			if info.Meta == nil {
				info.Meta = map[string]any{}
			}
			info.Meta[MetaDamage] = damage
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	return resp, nil
}

// parentFilter reads the _meta["acp-agent/parentSession"] filter of a
// session/list request: "" when absent, else a valid session id.
func parentFilter(meta map[string]any) (string, error) {
	v, ok := meta[MetaParentSession]
	if !ok || v == nil {
		return "", nil
	}
	id, ok := v.(string)
	if !ok {
		return "", errorf(CodeInvalidParams, "_meta[%q] must be a session id string, not %T", MetaParentSession, v)
	}
	if err := session.ValidateID(id); err != nil {
		return "", &Error{Code: CodeInvalidSessionID, Message: fmt.Sprintf("_meta[%q]: invalid session id %q: %v", MetaParentSession, id, err), Err: err}
	}
	return id, nil
}

// storedRows returns the stored sessions, or the live ones when the server
// has no durable store.
func (s *Server) storedRows(ctx context.Context) ([]StoredSession, error) {
	if s.opts.Stored != nil {
		return s.opts.Stored.List(ctx)
	}
	live := s.opts.Sessions.List()
	rows := make([]StoredSession, 0, len(live))
	for _, sess := range live {
		r := StoredSession{Header: sess.Header(), UpdatedAt: sess.Header().CreatedAt}
		if last, ok := sess.Last(); ok {
			r.UpdatedAt = last.Time
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// titleOf returns a session's title: from the row, the CachedTitle hook,
// the Title hook, the live log, or the stored log, in that order, and
// what is damaged in its log ("" for a healthy one): the row's Damage,
// else, where the log was read here, Options.DescribeDamage of that read.
// Failures only lose the title.
func (s *Server) titleOf(ctx context.Context, r StoredSession) (string, string) {
	if r.Title != "" || r.TitleKnown {
		return r.Title, r.Damage
	}
	if s.opts.CachedTitle != nil {
		if t, ok := s.opts.CachedTitle(r); ok {
			return t, r.Damage
		}
	}
	id := r.Header.ID
	if s.opts.Title != nil {
		t, err := s.opts.Title(ctx, id)
		if err != nil {
			s.log.Warn("session title unavailable", "session_id", id, "err", err)
		}
		return t, r.Damage
	}
	if sess, ok := s.opts.Sessions.Get(id); ok {
		events, err := sess.Events()
		if err != nil {
			s.log.Warn("session title unavailable", "session_id", id, "err", err)
		}
		return LatestTitle(events), r.Damage
	}
	if s.opts.Stored == nil {
		return "", r.Damage
	}
	_, events, err := s.opts.Stored.Inspect(ctx, id)
	damage := r.Damage
	if s.opts.DescribeDamage != nil {
		if d := s.opts.DescribeDamage(id, events, err); d != "" {
			damage = d
		}
	}
	if err != nil {
		s.log.Warn("session title unavailable", "session_id", id, "err", err)
		return "", damage
	}
	return LatestTitle(events), damage
}

// LatestTitle returns the title of the last session/title event, or "".
func LatestTitle(events []session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != session.TypeSessionTitle {
			continue
		}
		if d, err := session.DecodeData[session.TitleData](events[i]); err == nil && d.Title != "" {
			return d.Title
		}
	}
	return ""
}
