package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/acpschema"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// Client kinds of the subagent-session tests.
const (
	clientV1    = "clientCapabilities.subagents"
	clientAlias = "_meta subagentUpdates (alias)"
	clientPlain = "no capability"
)

// capRewriter adds clientCapabilities.subagents: {} to the initialize
// request the SDK client writes (its type has no field for it), as an ACP
// v1 client sends it. The SDK writes each message in one Write.
type capRewriter struct{ w io.Writer }

func (r capRewriter) Write(p []byte) (int, error) {
	if !strings.Contains(string(p), `"method":"initialize"`) {
		return r.w.Write(p)
	}
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		return 0, err
	}
	params, _ := m["params"].(map[string]any)
	caps, _ := params["clientCapabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
		params["clientCapabilities"] = caps
	}
	caps["subagents"] = map[string]any{}
	b, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	if _, err := r.w.Write(append(b, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

// startSubagents serves a fresh composition on dir to client c (a wsClient:
// it answers permission questions) of the given kind, with the workspace
// test tools, and initializes the connection.
// Each edit adjusts the app's config.
func startSubagents(t *testing.T, dir string, m model.Model, c *wsClient, kind string, edits ...func(*app.Config)) *wsEnv {
	t.Helper()
	ref := &resolverRef{}
	cfg := app.Config{
		DataDir: dir,
		Tools:   []tool.Tool{writeTool{ref}, bashTool{ref}},
		Version: "test",
		Logger:  testLogger(t),
		Testing: &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true},
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	a, err := app.New(cfg)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	ref.mu.Lock()
	ref.r = a.Workspace()
	ref.mu.Unlock()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &env{t: t, dir: dir, app: a, rec: c.recorder, c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	tap := &wireTap{r: a2cR}
	var toAgent io.Writer = c2aW
	if kind == clientV1 {
		toAgent = capRewriter{c2aW}
	}
	e.cs = acpsdk.NewClientSideConnection(c, toAgent, tap)
	t.Cleanup(e.stop)
	req := acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}
	if kind == clientAlias {
		req.ClientCapabilities.Meta = map[string]any{acp.MetaNamespace: map[string]any{acp.CapSubagentUpdates: true}}
	}
	if _, err := e.cs.Initialize(ctxFor(t), req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &wsEnv{env: e, client: c, tap: tap}
}

// frame is one line the agent wrote, decoded.
type frame struct {
	line    string
	method  string
	session string // params.sessionId
	kind    string // params.update.sessionUpdate
	update  map[string]any
	id      json.RawMessage
}

func frames(lines []string) []frame {
	var out []frame
	for _, l := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				SessionID string         `json:"sessionId"`
				Update    map[string]any `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(l), &m) != nil || m.Method == "" {
			continue
		}
		f := frame{line: l, method: m.Method, session: m.Params.SessionID, update: m.Params.Update, id: m.ID}
		f.kind, _ = m.Params.Update["sessionUpdate"].(string)
		out = append(out, f)
	}
	return out
}

// subagentKinds are the session updates only a client with the capability
// may receive.
var subagentKinds = []string{acp.UpdateSubagent, acp.UpdateSessionMessage, acp.UpdateSessionMessageChunk}

// names reports the child ids frame f names: the session it is sent on,
// the child a subagent_update is about, and a message's participants.
func (f frame) names() []string {
	out := []string{f.session}
	for _, k := range []string{"senderSessionId", "recipientSessionId"} {
		if v, _ := f.update[k].(string); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// checkAnnouncedFirst: every frame that names a child (sent on it, or a
// message naming it) comes after the subagent_update announcing it on its
// parent; it returns the parent each child was announced on.
func checkAnnouncedFirst(t *testing.T, fs []frame, children map[string]bool) map[string]string {
	t.Helper()
	announced := map[string]string{}
	for i, f := range fs {
		if f.kind == acp.UpdateSubagent {
			id, _ := f.update["sessionId"].(string)
			if _, ok := announced[id]; !ok {
				announced[id] = f.session
			}
			continue
		}
		for _, n := range f.names() {
			if children[n] {
				if _, ok := announced[n]; !ok {
					t.Errorf("frame %d names child %s before its announcement: %s", i, n, f.line)
				}
			}
		}
	}
	return announced
}

// states lists the state snapshots sent for child id, in order.
func states(fs []frame, id string) []string {
	var out []string
	for _, f := range fs {
		if f.kind != acp.UpdateSubagent || f.update["sessionId"] != id {
			continue
		}
		st, ok := f.update["state"].(map[string]any)
		if !ok {
			continue
		}
		s := st["state"].(string)
		if r, _ := st["stopReason"].(string); r != "" {
			s += " " + r
		}
		out = append(out, s)
	}
	return out
}

// messages renders the session_message(+chunk) traffic on session on as
// "sender->recipient: text".
func messages(fs []frame, on string) []string {
	type msg struct{ from, to, text string }
	byID := map[string]*msg{}
	var order []string
	for _, f := range fs {
		if f.session != on || (f.kind != acp.UpdateSessionMessage && f.kind != acp.UpdateSessionMessageChunk) {
			continue
		}
		id := f.update["messageId"].(string)
		m := byID[id]
		if m == nil {
			m = &msg{}
			byID[id] = m
			order = append(order, id)
		}
		if f.kind == acp.UpdateSessionMessage {
			m.from, _ = f.update["senderSessionId"].(string)
			m.to, _ = f.update["recipientSessionId"].(string)
			continue
		}
		c, _ := f.update["content"].(map[string]any)
		text, _ := c["text"].(string)
		m.text += text
	}
	var out []string
	for _, id := range order {
		m := byID[id]
		out = append(out, m.from+"->"+m.to+": "+m.text)
	}
	return out
}

const treeScript = `
model:
  main:
    - tool_calls:
        - id: call-fg
          name: subagent
          arguments: '{"description": "Fore", "prompt": "Look.", "run_in_background": false}'
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: PARENT_DONE
    - text: NOTED
  Fore:
    - tool_calls:
        - id: call-nest
          name: subagent
          arguments: '{"description": "Inner", "prompt": "Dig.", "run_in_background": false}'
    - text: FORE_DONE
  Inner:
    - text: INNER_DONE
  Back:
    - text: BACK_DONE
`

// childrenByLabel maps each descendant's label to its id, from the catalog.
func childrenByLabel(t *testing.T, e *env, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(id string)
	walk = func(id string) {
		entries, err := e.app.Catalog.ListChildren(context.Background(), id)
		if err != nil {
			t.Fatalf("children of %s: %v", id, err)
		}
		for _, en := range entries {
			out[en.Label] = en.ID
			walk(en.ID)
		}
	}
	walk(root)
	return out
}

// awaitNoted waits until the parent answered the background child's
// settlement (its notice turn) and the child left the runtime.
func awaitNoted(ctx context.Context, t *testing.T, e *env, id string) {
	t.Helper()
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		var parent []acpsdk.SessionNotification
		for _, n := range ns {
			if string(n.SessionId) == id {
				parent = append(parent, n)
			}
		}
		return slices.Contains(transcript(parent), "agent_message_chunk NOTED")
	}); err != nil {
		t.Fatalf("the parent never read the settlement: %q", transcript(e.rec.snapshot(id)))
	}
}

// TestSubagentSessions_TreeOnTheWire: a client with the capability (or its
// alias) sees a foreground, a background and a nested child announced on
// their own parents before any traffic naming them, each child's prompt
// as a message from its parent, state snapshots from running to idle with
// the stop reason (the background child through its settlement, which
// comes back to the parent as its message), and every frame matches the
// ACP v1 schema; after a restart, loading the parent announces the tree
// again with the states the logs record. A client without it receives none
// of these frames and nothing under a child's id.
func TestSubagentSessions_TreeOnTheWire(t *testing.T) {
	for _, kind := range []string{clientV1, clientAlias, clientPlain} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxUntilDeadline(t)
			dir := t.TempDir()
			// The background child starts once the parent's turn is over,
			// so its settlement comes at a fixed point.
			gate := &gateModel{Model: loadScript(t, treeScript), key: "Back", release: make(chan struct{})}
			e := startSubagents(t, dir, gate, newWSClient(false, false), kind)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "delegate"); err != nil {
				t.Fatal(err)
			}
			close(gate.release)
			awaitNoted(ctx, t, e.env, id)
			kids := childrenByLabel(t, e.env, id)
			fore, back, inner := kids["Fore"], kids["Back"], kids["Inner"]
			if fore == "" || back == "" || inner == "" {
				t.Fatalf("children = %v", kids)
			}
			awaitSettled(ctx, t, e.env, back)
			isChild := map[string]bool{fore: true, back: true, inner: true}
			wantStates := map[string][]string{
				fore:  {"running", "idle end_turn"},
				inner: {"running", "idle end_turn"},
				back:  {"running", "idle end_turn"},
			}
			if kind != clientPlain {
				// Each child's frames go through its own stream: wait for
				// the last of them.
				awaitFrames(ctx, t, e, func(fs []frame) bool {
					for child, want := range wantStates {
						if !slices.Equal(states(fs, child), want) {
							return false
						}
					}
					return len(messages(fs, id)) > 0
				}, func(fs []frame) string {
					return fmt.Sprintf("states %v %v %v, parent messages %q", states(fs, fore), states(fs, inner), states(fs, back), messages(fs, id))
				})
			}
			fs := frames(e.tap.lines())
			for _, f := range fs {
				acpschema.CheckMessage(t, []byte(f.line))
			}
			if kind == clientPlain {
				for _, f := range fs {
					if slices.Contains(subagentKinds, f.kind) || isChild[f.session] {
						t.Errorf("a client without the capability got %s", f.line)
					}
				}
				return
			}
			parents := checkAnnouncedFirst(t, fs, isChild)
			if want := map[string]string{fore: id, back: id, inner: fore}; !mapsEqual(parents, want) {
				t.Errorf("announced on %v, want %v", parents, want)
			}
			for _, f := range fs {
				if f.kind != acp.UpdateSubagent || f.update["title"] == nil {
					continue
				}
				caps, _ := f.update["capabilities"].(map[string]any)
				_, cancel := caps["cancel"]
				if child := f.update["sessionId"]; cancel != (child == back) {
					t.Errorf("capabilities of %v = %v: only the background child can be cancelled", child, caps)
				}
			}
			for child, want := range wantStates {
				if got := states(fs, child); !slices.Equal(got, want) {
					t.Errorf("states of %s = %v, want %v", child, got, want)
				}
			}
			if got, want := messages(fs, fore), []string{id + "->" + fore + ": Look."}; !slices.Equal(got, want) {
				t.Errorf("messages on Fore = %q, want %q", got, want)
			}
			if got, want := messages(fs, inner), []string{fore + "->" + inner + ": Dig."}; !slices.Equal(got, want) {
				t.Errorf("messages on Inner = %q, want %q", got, want)
			}
			parentMsgs := messages(fs, id)
			if len(parentMsgs) != 1 || !strings.HasPrefix(parentMsgs[0], back+"->"+id+": ") {
				t.Errorf("messages on the parent = %q, want the background child's settlement", parentMsgs)
			}

			// A restart, then session/load of the parent: the whole tree is
			// announced again, with the states the logs record.
			e.stop()
			e2 := startSubagents(t, dir, loadScript(t, treeScript), newWSClient(false, false), kind)
			if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatal(err)
			}
			fs2 := frames(e2.tap.lines())
			for _, f := range fs2 {
				acpschema.CheckMessage(t, []byte(f.line))
			}
			parents = checkAnnouncedFirst(t, fs2, isChild)
			if want := map[string]string{fore: id, back: id, inner: fore}; !mapsEqual(parents, want) {
				t.Errorf("after a restart, announced on %v, want %v", parents, want)
			}
			for _, child := range []string{fore, back, inner} {
				if got := states(fs2, child); !slices.Equal(got, []string{"idle end_turn"}) {
					t.Errorf("after a restart, states of %s = %v, want [idle end_turn]", child, got)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

const askingChildScript = `
model:
  main:
    - tool_calls:
        - id: call-fg
          name: subagent
          arguments: '{"description": "Writer", "prompt": "Write it.", "run_in_background": false}'
    - text: PARENT_DONE
  Writer:
    - tool_calls:
        - id: w-1
          name: write
          arguments: '{"path": "out.txt", "content": "x"}'
    - text: WRITTEN
`

// TestSubagentSessions_ChildQuestion: a permission question of an
// announced child is asked on the child's own session, after its
// tool_call there; the child shows requires_action while it waits and
// running again once answered. A client without the capability is asked
// on its root session as before.
func TestSubagentSessions_ChildQuestion(t *testing.T) {
	for _, kind := range []string{clientV1, clientPlain} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxFor(t)
			c := newWSClient(false, false, "allow_once")
			e := startSubagents(t, t.TempDir(), loadScript(t, askingChildScript), c, kind)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "delegate"); err != nil {
				t.Fatal(err)
			}
			child := findChild(t, e.env, id)
			reqs := c.requests()
			if len(reqs) != 1 {
				t.Fatalf("asked %d times, want 1", len(reqs))
			}
			fs := frames(e.tap.lines())
			for _, f := range fs {
				acpschema.CheckMessage(t, []byte(f.line))
			}
			if kind == clientPlain {
				if string(reqs[0].SessionId) != id {
					t.Errorf("asked on %s, want the root %s", reqs[0].SessionId, id)
				}
				return
			}
			if string(reqs[0].SessionId) != child || reqs[0].ToolCall.ToolCallId != "w-1" {
				t.Errorf("asked on %s about %s, want the child %s about w-1", reqs[0].SessionId, reqs[0].ToolCall.ToolCallId, child)
			}
			checkAnnouncedFirst(t, fs, map[string]bool{child: true})
			ask := slices.IndexFunc(fs, func(f frame) bool { return f.method == "session/request_permission" })
			call := slices.IndexFunc(fs, func(f frame) bool {
				return f.session == child && f.kind == "tool_call" && f.update["toolCallId"] == "w-1"
			})
			if ask < 0 || call < 0 || call > ask {
				t.Errorf("the child's tool_call at frame %d, the question at %d", call, ask)
			}
			want := []string{"running", "requires_action", "running", "idle end_turn"}
			awaitFrames(ctx, t, e, func(fs []frame) bool { return slices.Equal(states(fs, child), want) },
				func(fs []frame) string { return fmt.Sprint("states = ", states(fs, child), ", want ", want) })
		})
	}
}

// TestSubagentSessions_RequestsNamingAChild: a request naming a live
// child other than session/cancel is refused with -32602 saying why.
func TestSubagentSessions_RequestsNamingAChild(t *testing.T) {
	ctx := ctxFor(t)
	hold := &holdModel{Model: loadScript(t, cancelChildScript), key: "Back", entered: make(chan struct{}, 1)}
	e := startSubagents(t, t.TempDir(), hold, newWSClient(false, false), clientV1)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "start"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.entered:
	case <-ctx.Done():
		t.Fatal("the child never called its model")
	}
	child := findChild(t, e.env, id)
	_, err := e.prompt(ctx, child, "hi")
	wantRPCError(t, err, -32602, "is a subagent session of "+id)
	_, err = e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(child), ModeId: acp.ModeBypass})
	wantRPCError(t, err, -32602, "only request it takes is session/cancel")
	// session/cancel is honoured: its capabilities include cancel.
	if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(child)}); err != nil {
		t.Fatal(err)
	}
	awaitSettled(ctx, t, e.env, child)
	// The state frame goes through the child's stream, which no
	// recorder sees (the SDK client cannot decode it): poll the wire.
	awaitFrames(ctx, t, e, func(fs []frame) bool {
		got := states(fs, child)
		return len(got) > 0 && got[len(got)-1] == "idle cancelled"
	}, func(fs []frame) string {
		return fmt.Sprint("states ", states(fs, child), ", want the last idle cancelled")
	})
}

// awaitFrames polls the wire tap until cond holds, failing with why().
func awaitFrames(ctx context.Context, t *testing.T, e *wsEnv, cond func([]frame) bool, why func([]frame) string) {
	t.Helper()
	for {
		fs := frames(e.tap.lines())
		if cond(fs) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(why(fs))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// gateModel holds the model calls of one child (by script key) until
// release is closed; every other call goes to Model at once.
type gateModel struct {
	model.Model
	key     string
	release chan struct{}
}

func (m *gateModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	if req.Caller.ScriptKey == m.key {
		select {
		case <-m.release:
		case <-ctx.Done():
		}
	}
	return m.Model.Stream(ctx, req)
}
