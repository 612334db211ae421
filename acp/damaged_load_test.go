package acp_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	appcli "github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/persistence"
)

// damageLine replaces the line of the log at path that holds every one of
// marks with a cut-off record (not a torn tail: lines follow it) and
// returns its 1-based number and the damaged bytes.
func damageLine(t *testing.T, path string, marks ...string) (int, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	bad := -1
	for i, l := range lines {
		all := true
		for _, m := range marks {
			all = all && bytes.Contains(l, []byte(m))
		}
		if all {
			bad = i
		}
	}
	if bad < 0 || bad >= len(lines)-2 {
		t.Fatalf("no line with %q before the last one in %s", marks, path)
	}
	lines[bad] = []byte(`{"type":"user/message","seq":`)
	damaged := bytes.Join(lines, []byte("\n"))
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	return bad + 1, damaged
}

// wantCode checks a JSON-RPC error's number and its data's stable code,
// and that its message holds every one of contains and none of lacks.
func wantCode(t *testing.T, what string, err error, rpc int, code acp.Code, contains, lacks []string) {
	t.Helper()
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		t.Errorf("%s: error = %v, want JSON-RPC %d %s", what, err, rpc, code)
		return
	}
	data, _ := re.Data.(map[string]any)
	if re.Code != rpc || data["code"] != string(code) {
		t.Errorf("%s: error = %d %v %q, want %d %s", what, re.Code, data["code"], re.Message, rpc, code)
	}
	for _, c := range contains {
		if !strings.Contains(re.Message, c) {
			t.Errorf("%s: message %q lacks %q", what, re.Message, c)
		}
	}
	for _, c := range lacks {
		if strings.Contains(re.Message, c) {
			t.Errorf("%s: message %q says %q", what, re.Message, c)
		}
	}
}

// TestLoadDamagedSessionShowsValidPart: a top-level session and a
// subagent child whose logs have a bad line in the middle load over the
// real connection with their valid part replayed and a notice saying
// what is damaged and how to repair it; prompts, mode changes, resume and
// fork are refused with SESSION_DAMAGED (not as a subagent session), and
// the file is not changed.
func TestLoadDamagedSessionShowsValidPart(t *testing.T) {
	tests := []struct {
		name string
		// seed writes the session through a first agent process and
		// returns its id and the marks of the line to damage.
		seed func(t *testing.T, ctx context.Context, e *env, cwd string) (id string, marks []string)
		// before is shown (the valid part), after is not.
		before, after []string
		notice        string
		child         bool
	}{
		{
			name: "top-level",
			seed: func(t *testing.T, ctx context.Context, e *env, cwd string) (string, []string) {
				id := e.newSession(ctx, cwd)
				for _, text := range []string{"first question", "second question"} {
					if r, err := e.prompt(ctx, id, text); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
						t.Fatalf("prompt = %v, %v", r, err)
					}
				}
				return id, []string{"second question", `"user/message"`}
			},
			before: []string{"first question", "FIRST_ANSWER"},
			after:  []string{"SECOND_ANSWER"},
			notice: "This session's log is damaged",
		},
		{
			name: "child",
			seed: func(t *testing.T, ctx context.Context, e *env, cwd string) (string, []string) {
				parent := e.newSession(ctx, cwd)
				child, err := e.app.Sessions.Create(session.Header{Cwd: cwd, ParentSession: parent, Origin: session.OriginSubagent, DelegationDepth: 1}, session.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for i, text := range []string{"child task one", "child task two", "child task three"} {
					msg := session.Message{ID: "m" + strconv.Itoa(i), Role: session.RoleUser, Content: []session.Block{session.Text(text)}, Source: session.Source{Kind: session.SourceUser}}
					if _, err := child.Append(session.TypeUserMessage, msg); err != nil {
						t.Fatal(err)
					}
				}
				return child.ID(), []string{"child task two"}
			},
			before: []string{"child task one"},
			after:  []string{"child task two", "child task three"},
			notice: "This subagent session's log is damaged",
			child:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			dir := t.TempDir()
			cwd := tempCwd(t)
			e := start(t, dir, loadScript(t, "model:\n  main:\n    - text: \"FIRST_ANSWER\"\n    - text: \"SECOND_ANSWER\"\n"))
			e.initialize(ctx)
			id, marks := tt.seed(t, ctx, e, cwd)
			e.stop()
			path := filepath.Join(dir, "sessions", id+".jsonl")
			line, damaged := damageLine(t, path, marks...)

			e2 := start(t, dir, loadScript(t, "model:\n  main:\n    - text: \"NEVER\"\n"))
			e2.initialize(ctx)
			if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatalf("load of a damaged session: %v", err)
			}
			got := transcript(e2.rec.snapshot(id))
			shown := strings.Join(got, "\n")
			for _, want := range append(tt.before, tt.notice, "line "+strconv.Itoa(line), "acp-agent sessions repair "+id) {
				if !strings.Contains(shown, want) {
					t.Errorf("replay lacks %q:\n%s", want, shown)
				}
			}
			for _, not := range tt.after {
				if strings.Contains(shown, not) {
					t.Errorf("replay shows %q, which follows the damage:\n%s", not, shown)
				}
			}
			// The notice follows the valid part, also when the session is
			// loaded again.
			if last := got[len(got)-1]; !strings.Contains(last, tt.notice) {
				t.Errorf("last update = %q, want the notice", last)
			}
			e2.rec.reset()
			if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatalf("second load of a damaged session: %v", err)
			}
			if again := transcript(e2.rec.snapshot(id)); strings.Join(again, "\n") != shown {
				t.Errorf("second load shows\n%s\nwant\n%s", strings.Join(again, "\n"), shown)
			}
			refusal := []string{"damaged", "line " + strconv.Itoa(line), "acp-agent sessions repair " + id}
			_, err := e2.prompt(ctx, id, "more")
			wantCode(t, "prompt", err, -32602, acp.CodeSessionDamaged, append(refusal, "cannot be prompted"), []string{"subagent session"})
			_, err = e2.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "plan"})
			wantCode(t, "set_mode", err, -32602, acp.CodeSessionDamaged, refusal, []string{"subagent session"})
			if !tt.child {
				// A resume of the damaged session, bound or not, is refused
				// the same way (it would have nothing to continue from).
				_, err = e2.cs.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd})
				wantCode(t, "resume (bound)", err, -32602, acp.CodeSessionDamaged, refusal, nil)
				e3 := start(t, dir, loadScript(t, "model:\n  main:\n    - text: \"NEVER\"\n"))
				e3.initialize(ctx)
				_, err = e3.cs.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd})
				wantCode(t, "resume", err, -32602, acp.CodeSessionDamaged, refusal, nil)
				_, err = e3.cs.UnstableForkSession(ctx, acpsdk.UnstableForkSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd})
				wantCode(t, "fork", err, -32602, acp.CodeSessionDamaged, append(refusal, "cannot be forked"), nil)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
				t.Errorf("loading changed the damaged log")
			}
		})
	}
}

// seedTurns writes a stored top-level session with n completed turns,
// each a user message "question <i>", through persistence (real JSONL).
func seedTurns(t *testing.T, dir, cwd string, n int) string {
	t.Helper()
	p, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(&session.DeterministicSources{})
	detach := p.Attach(st)
	s, err := st.Create(session.Header{Cwd: cwd}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		msg := session.Message{ID: "m" + strconv.Itoa(i), Role: session.RoleUser, Content: []session.Block{session.Text("question " + strconv.Itoa(i))}, Source: session.Source{Kind: session.SourceUser}}
		for _, ev := range []struct {
			typ  string
			data any
		}{
			{session.TypeTurnStart, session.TurnData{Turn: i}},
			{session.TypeUserMessage, msg},
			{session.TypeTurnEnd, session.TurnEndData{Turn: i, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}},
		} {
			if _, err := s.Append(ev.typ, ev.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := s.ID()
	if err := st.Remove(id); err != nil {
		t.Fatal(err)
	}
	detach()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestLoadWhoseReplayCannotBeReadBackFails: when the history of a loaded
// session cannot be read back from its file (an I/O error at the read-back
// seam), session/load answers a JSON-RPC error with the cause instead of
// success with a cut or empty history, and the session is not left
// bound: once the disk reads again, a new load replays it whole. The log
// holds more events than one replay batch, so the replay reads back from
// the file whenever its first batch was read.
func TestLoadWhoseReplayCannotBeReadBackFails(t *testing.T) {
	// Two replays of 6,000 events under -race take over 20 s on a loaded
	// machine; the deadline only guards against a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cwd := tempCwd(t)
	const turns = 2000 // 6,000 events, past one replay batch (4,096)
	id := seedTurns(t, dir, cwd, turns)

	var failing atomic.Bool
	failing.Store(true)
	e2 := startCfg(t, dir, loadScript(t, "model:\n  main:\n    - text: \"NEXT_ANSWER\"\n"), func(c *app.Config) {
		c.Testing.StorageFaultErr = func(p persistence.FaultPoint) error {
			if p == persistence.FaultReadBack && failing.Load() {
				return syscall.EIO
			}
			return nil
		}
	})
	e2.initialize(ctx)
	load := func() error {
		_, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}})
		return err
	}
	err := load()
	wantCode(t, "load", err, -32603, acp.CodeReplayFailed,
		[]string{"session " + id + " was not loaded", "could not be read back", id + ".jsonl", syscall.EIO.Error()}, nil)
	if _, ok := e2.app.Sessions.Get(id); ok {
		t.Errorf("the session stayed live after its load failed")
	}
	_, err = e2.prompt(ctx, id, "after the failed load")
	wantCode(t, "prompt after the failed load", err, -32002, acp.CodeUnknownSession, nil, nil)

	failing.Store(false)
	e2.rec.reset()
	if err := load(); err != nil {
		t.Fatalf("load once the disk reads again: %v", err)
	}
	users := 0
	for _, line := range transcript(e2.rec.snapshot(id)) {
		if strings.HasPrefix(line, "user_message_chunk question ") {
			users++
		}
	}
	if users != turns {
		t.Errorf("the replay showed %d of %d user messages", users, turns)
	}
	if r, err := e2.prompt(ctx, id, "one more question"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("prompt after the load = %v, %v", r, err)
	}
}

// cli runs an acp-agent command on data directory dir and returns its
// stdout and stderr together.
func cli(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	appcli.Main(context.Background(), append([]string{"--data-dir", dir}, args...), strings.NewReader(""), &out, &out, func(string) string { return "" })
	return out.String()
}

// TestDamageWordedAsTheCommandsWordIt: over the real connection,
// session/list (_meta "acp-agent/damage") and the session/load notice
// word a damaged log, and a repaired one, exactly as `acp-agent sessions
// show` and `sessions repair` do; a healthy session carries no damage.
func TestDamageWordedAsTheCommandsWordIt(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	cwd := tempCwd(t)
	e := start(t, dir, loadScript(t, "model:\n  main:\n    - text: \"A1\"\n    - text: \"A2\"\n    - text: \"B1\"\n    - text: \"B2\"\n    - text: \"C1\"\n"))
	e.initialize(ctx)
	ids := map[string]string{}
	for _, name := range []string{"damaged", "repaired", "healthy"} {
		ids[name] = e.newSession(ctx, cwd)
		for _, text := range []string{name + " one", name + " two"} {
			if name == "healthy" && strings.HasSuffix(text, "two") {
				continue
			}
			if _, err := e.prompt(ctx, ids[name], text); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.stop()
	sdir := filepath.Join(dir, "sessions")
	line, _ := damageLine(t, filepath.Join(sdir, ids["damaged"]+".jsonl"), "damaged two", `"user/message"`)
	damageLine(t, filepath.Join(sdir, ids["repaired"]+".jsonl"), "repaired two", `"user/message"`)
	if out := cli(t, dir, "sessions", "repair", "--yes", ids["repaired"]); !strings.Contains(out, "repaired session") {
		t.Fatalf("repair: %s", out)
	}
	want := map[string]string{
		"damaged": "corrupt at line " + strconv.Itoa(line) + " of " + filepath.Join(sdir, ids["damaged"]+".jsonl") + ": unexpected end of JSON input",
		"repaired": "repaired: line " + strconv.Itoa(line) + " of " + filepath.Join(sdir, ids["repaired"]+".jsonl") + " dropped (the original is kept in " +
			filepath.Join(sdir, ids["repaired"]+".jsonl.broken") + ")",
	}
	// The commands' wording, which the connection must repeat.
	if out := cli(t, dir, "sessions", "show", ids["damaged"]); !strings.Contains(out, want["damaged"]) {
		t.Fatalf("sessions show says\n%s\nnot %q", out, want["damaged"])
	}
	if out := cli(t, dir, "sessions", "repair", ids["repaired"]); !strings.Contains(out, want["repaired"]) {
		t.Fatalf("sessions repair says\n%s\nnot %q", out, want["repaired"])
	}

	e2 := start(t, dir, loadScript(t, "model:\n  main:\n    - text: \"NEVER\"\n    - text: \"NEVER\"\n    - text: \"AFTER\"\n"))
	e2.initialize(ctx)
	r, err := e2.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range r.Sessions {
		if d, ok := s.Meta[acp.MetaDamage]; ok {
			got[string(s.SessionId)] = d.(string)
		}
	}
	for name, id := range ids {
		if got[id] != want[name] {
			t.Errorf("session/list: %s session's damage = %q, want %q", name, got[id], want[name])
		}
	}
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(ids["damaged"]), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if shown := strings.Join(transcript(e2.rec.snapshot(ids["damaged"])), "\n"); !strings.Contains(shown, "damaged ("+want["damaged"]+")") {
		t.Errorf("load notice does not say %q:\n%s", want["damaged"], shown)
	}
	// A repaired session loads with a notice in the same words and
	// continues; once its turn is checkpointed the listing is served from
	// the index, which still says it was repaired.
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(ids["repaired"]), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if shown := strings.Join(transcript(e2.rec.snapshot(ids["repaired"])), "\n"); !strings.Contains(shown, "not whole: "+want["repaired"]) ||
		!strings.Contains(shown, "repaired one") {
		t.Errorf("load of the repaired session:\n%s\nwant its history and a notice saying %q", shown, want["repaired"])
	}
	if r, err := e2.prompt(ctx, ids["repaired"], "after the repair"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after the repair = %v, %v", r, err)
	}
	if _, err := e2.cs.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(ids["repaired"])}); err != nil {
		t.Fatal(err)
	}
	r, err = e2.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Sessions {
		if string(s.SessionId) == ids["repaired"] && s.Meta[acp.MetaDamage] != want["repaired"] {
			t.Errorf("session/list after the repaired session went on: damage = %v, want %q", s.Meta[acp.MetaDamage], want["repaired"])
		}
	}
	if out := cli(t, dir, "sessions"); !strings.Contains(out, ids["repaired"]+"  ") || !strings.Contains(out, "repaired: line "+strconv.Itoa(line)+" of ") {
		t.Errorf("sessions after the repaired session went on:\n%s", out)
	}
}
