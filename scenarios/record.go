package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"

	"github.com/acp-agent/acp-agent/agent/transcript"
)

// storedSession is one session file read back after the run.
type storedSession struct {
	Header session.Header
	Raw    []byte // the file, placeholders applied
	Events []session.Event
	Depth  int // depth in the recorded tree (0 = root)
}

// record reads the data directory and builds the three recordings.
func (r *runner) record() (*Recording, error) {
	wire, invalid := r.rec.transcript()
	if len(invalid) > 0 {
		return nil, fmt.Errorf("%s: the wire carried invalid lines:\n  %s", r.sc.File, strings.Join(invalid, "\n  "))
	}
	sessions, err := r.readSessions()
	if err != nil {
		return nil, err
	}
	var all bytes.Buffer
	for _, s := range sessions {
		all.Write(s.Raw)
	}
	rec := &Recording{
		Wire:     r.placeholders(wire),
		Sessions: all.Bytes(),
		Requests: r.placeholders(r.requests.render()),
	}
	ws, err := r.workspaceSection()
	if err != nil {
		return nil, err
	}
	rec.Transcript = r.placeholders(append(renderTranscript(r.sc, r.results, sessions, r.names()), ws...))
	return rec, nil
}

// names maps session ids to the references the scenario used for them.
func (r *runner) names() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for ref, id := range r.refs {
		if ref == id {
			continue
		}
		if prev, ok := out[id]; !ok || ref < prev {
			out[id] = ref
		}
	}
	return out
}

// placeholders replaces the run's directories, the only volatile strings
// of a scenario recording.
func (r *runner) placeholders(b []byte) []byte {
	if r.mcp != nil {
		b = bytes.ReplaceAll(b, []byte(r.mcp.URL), []byte(MCPURLPlaceholder))
	}
	for _, p := range []struct{ path, ph string }{{r.dataDir, DataPlaceholder}, {r.cwd, CwdPlaceholder}} {
		b = bytes.ReplaceAll(b, []byte(p.path), []byte(p.ph))
		if q := strconv.Quote(p.path); q[1:len(q)-1] != p.path {
			b = bytes.ReplaceAll(b, []byte(q[1:len(q)-1]), []byte(p.ph))
		}
	}
	return b
}

// readSessions reads every session file of the data directory and orders
// them as a tree.
func (r *runner) readSessions() ([]storedSession, error) {
	dir := filepath.Join(r.dataDir, "sessions")
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	byID := map[string]*storedSession{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		s, err := parseStored(name, data)
		if err != nil {
			return nil, err
		}
		s.Raw = r.placeholders(data)
		byID[s.Header.ID] = s
	}
	children := map[string][]*storedSession{}
	var roots []*storedSession
	for _, s := range byID {
		if p := s.Header.ParentSession; p != "" && byID[p] != nil {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	order := func(ss []*storedSession) {
		sort.Slice(ss, func(i, j int) bool {
			a, b := ss[i].Header, ss[j].Header
			if a.CreatedAt != b.CreatedAt {
				return a.CreatedAt < b.CreatedAt
			}
			return a.ID < b.ID
		})
	}
	order(roots)
	var out []storedSession
	var walk func(s *storedSession, depth int)
	walk = func(s *storedSession, depth int) {
		s.Depth = depth
		out = append(out, *s)
		kids := children[s.Header.ID]
		order(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, s := range roots {
		walk(s, 0)
	}
	return out, nil
}

func parseStored(name string, data []byte) (*storedSession, error) {
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) == 0 || len(lines[0]) == 0 {
		return nil, fmt.Errorf("session file %s is empty", name)
	}
	h, err := session.ParseHeaderLine(lines[0], "")
	if err != nil {
		return nil, fmt.Errorf("session file %s: %w", name, err)
	}
	s := &storedSession{Header: h}
	for i, l := range lines[1:] {
		var ev session.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			return nil, fmt.Errorf("session file %s line %d: %w", name, i+2, err)
		}
		s.Events = append(s.Events, ev)
	}
	return s, nil
}

// requestLog keeps every model request of a run. Requests of one session
// are deterministic; their interleaving across sessions is not, so they
// are rendered sorted.
type requestLog struct {
	mu   sync.Mutex
	reqs []model.Request
}

func (l *requestLog) add(req model.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, req)
}

type requestRow struct {
	Key      string       `json:"key"`
	Session  string       `json:"session"`
	Call     int          `json:"call"`
	Route    *model.Route `json:"route,omitempty"`
	System   string       `json:"system,omitempty"`
	Tools    []string     `json:"tools,omitempty"`
	Messages []messageRow `json:"messages"`
}

type messageRow struct {
	Role    string          `json:"role"`
	Content []session.Block `json:"content"`
}

func (l *requestLog) render() []byte {
	l.mu.Lock()
	reqs := append([]model.Request(nil), l.reqs...)
	l.mu.Unlock()
	sort.SliceStable(reqs, func(i, j int) bool {
		a, b := reqs[i].Caller, reqs[j].Caller
		if a.ScriptKey != b.ScriptKey {
			return a.ScriptKey < b.ScriptKey
		}
		if a.SessionID != b.SessionID {
			return a.SessionID < b.SessionID
		}
		return a.Call < b.Call
	})
	var b bytes.Buffer
	// The system prompt and tool list are shown on a session's first
	// request and again only when they change, to keep the golden short.
	lastSystem, lastTools := map[string]string{}, map[string]string{}
	for _, req := range reqs {
		row := requestRow{Key: req.Caller.ScriptKey, Session: req.Caller.SessionID, Call: req.Caller.Call, Messages: []messageRow{}}
		if req.Route != (model.Route{}) {
			rt := req.Route
			row.Route = &rt
		}
		var names []string
		for _, t := range req.Tools {
			names = append(names, t.Name)
		}
		sid := req.Caller.SessionID
		if prev, ok := lastSystem[sid]; !ok || prev != req.System {
			row.System = req.System
			lastSystem[sid] = req.System
		}
		joined := strings.Join(names, ",")
		if prev, seen := lastTools[sid]; !seen || prev != joined {
			row.Tools = names
			lastTools[sid] = joined
		}
		for _, m := range req.Messages {
			row.Messages = append(row.Messages, messageRow{Role: m.Role, Content: m.Content})
		}
		raw, err := json.Marshal(row)
		if err != nil {
			raw = []byte(fmt.Sprintf(`{"unencodable":%q}`, err.Error()))
		}
		b.WriteString(transcript.CompactJSON(raw))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
