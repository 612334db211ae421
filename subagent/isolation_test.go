package subagent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/errcode"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

var gitEnv = []string{
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t",
	"GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
	"GIT_COMMITTER_DATE=2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent",
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo makes a repository with one commit holding a.txt; it returns
// its resolved path (t.TempDir may sit behind a symlink).
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "a.txt")
	runGit(t, dir, "commit", "--quiet", "-m", "first")
	return dir
}

// worktreeStack is a durable stack whose parents work in repo and whose
// children labelled "edit" append a line to a.txt in their cwd.
func worktreeStack(t *testing.T, repo string, sc *script, wts subagent.Worktrees, maxBackground int) (*subagenttest.Stack, *persistence.Store) {
	t.Helper()
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	var st *subagenttest.Stack
	m := &subagenttest.FuncModel{Fn: func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
		if req.Caller.ScriptKey == "edit" && req.Caller.Call == 0 {
			sess, ok := st.Sessions.Get(req.Caller.SessionID)
			if !ok {
				t.Error("the child's session is not live")
			} else if err := os.WriteFile(filepath.Join(sess.Header().Cwd, "a.txt"), []byte("one\nedited\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
		return sc.respond(ctx, req)
	}}
	st = subagenttest.New(t, subagenttest.Config{
		Model: m, Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}, SyncTo: ps.SyncTo,
		Worktrees: wts, MaxBackground: maxBackground, ParentCwd: repo,
	})
	return st, ps
}

// TestWorktreeIsolation: a child started with isolation worktree works in
// its own worktree (recorded in its descriptor and its header before its
// first turn); an untouched worktree is removed at settlement, a changed
// one kept and reported with branch and diffstat; a cold resume restores
// the removed worktree and the settlement after it removes it again; the
// parent's git status stays clean throughout.
func TestWorktreeIsolation(t *testing.T) {
	ctx := testCtx(t)
	repo := gitRepo(t)
	repoCh := make(chan string, 1)
	restored := make(chan bool, 1)
	sc := newScript().text("clean", "nothing to do").add("clean", func(context.Context) ([]session.Chunk, error) {
		p := <-repoCh
		_, err := os.Stat(p)
		restored <- err == nil
		return subagenttest.Text("resumed"), nil
	}).text("edit", "edited a.txt").
		text("main", "NOTED", "NOTED", "NOTED", "NOTED")
	st, ps := worktreeStack(t, repo, sc, worktree.Git{Env: gitEnv}, 0)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")

	ids := map[string]string{}
	for _, label := range []string{"clean", "edit"} {
		id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
			Provider: "spawn", Label: label, Prompt: text("task: " + label), Parent: parent, Isolation: subagent.IsolationWorktree,
		})
		if err != nil {
			t.Fatalf("start %s: %v", label, err)
		}
		ids[label] = id
		// Durable before the first turn: the descriptor in the seed names
		// the worktree and the header's cwd is in it.
		h, evs := persistedEvents(t, ctx, durable{ps}, id)
		d, err := subagent.FoldFirst(evs[h.SeedLength:])
		if err != nil || d == nil || d.Worktree == nil {
			t.Fatalf("%s descriptor %+v %v", label, d, err)
		}
		want := filepath.Join(repo, ".acp-agent", "worktrees", id)
		if d.Isolation != subagent.IsolationWorktree || d.Worktree.Path != want || d.Worktree.Branch != "acp-agent/"+id || h.Cwd != want {
			t.Fatalf("%s: descriptor %+v worktree %+v cwd %s, want %s", label, d, d.Worktree, h.Cwd, want)
		}
		for _, ev := range evs[h.SeedLength:] {
			if ev.Type == session.TypeTurnStart {
				t.Fatalf("%s: a turn started before the descriptor was checked", label)
			}
			if ev.Type == session.TypeDescriptor {
				break
			}
		}
		lc.waitEnds(t, ctx, id, 1)
	}
	waitIdle(t, ctx, parent)
	notices := map[string]string{}
	for _, m := range userMessages(parent.Session().MustEvents()) {
		notices[m.Source.SenderSessionID] = session.JoinText(m.Content, "\n")
	}
	cleanPath := filepath.Join(repo, ".acp-agent", "worktrees", ids["clean"])
	editPath := filepath.Join(repo, ".acp-agent", "worktrees", ids["edit"])
	if _, err := os.Stat(cleanPath); !os.IsNotExist(err) {
		t.Errorf("untouched worktree still there: %v", err)
	}
	if !strings.Contains(notices[ids["clean"]], "Its worktree made no changes and was removed (branch acp-agent/"+ids["clean"]+" deleted).") {
		t.Errorf("clean notice:\n%s", notices[ids["clean"]])
	}
	if out := runGit(t, repo, "branch", "--list", "acp-agent/"+ids["clean"]); out != "" {
		t.Errorf("untouched branch kept: %q", out)
	}
	if data, err := os.ReadFile(filepath.Join(editPath, "a.txt")); err != nil || string(data) != "one\nedited\n" {
		t.Errorf("kept worktree's a.txt %q %v", data, err)
	}
	// Its work is committed on its branch: the task, the child's summary
	// and its id make the message; the notice names the commit.
	head := runGit(t, repo, "rev-parse", "acp-agent/"+ids["edit"])
	wantKept := "Its work is committed on branch acp-agent/" + ids["edit"] + " (commit " + head[:12] + "), worktree kept at " + editPath + ": 1 file changed, 1 insertion(+)."
	if n := notices[ids["edit"]]; !strings.Contains(n, wantKept) || !strings.Contains(n, "a.txt | 1 +") || !strings.Contains(n, "merge_worktree") {
		t.Errorf("edit notice:\n%s\nwant it to contain %q and the diffstat", n, wantKept)
	}
	if msg := runGit(t, repo, "log", "-1", "--format=%B", head); msg != "edit\n\nedited a.txt\n\nSubagent-Id: "+ids["edit"] {
		t.Errorf("commit message %q", msg)
	}
	if s := runGit(t, editPath, "status", "--porcelain"); s != "" {
		t.Errorf("uncommitted in the kept worktree: %q", s)
	}
	if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "one\n" {
		t.Errorf("the parent's a.txt changed: %q", data)
	}
	if s := runGit(t, repo, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("parent status not clean:\n%s", s)
	}

	// Cold resume of the clean child: its worktree comes back, and goes
	// again when it settles untouched.
	repoCh <- cleanPath
	if _, err := st.Runtime.Followup(ctx, parent, ids["clean"], text("again")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, ids["clean"], 2)
	if !<-restored {
		t.Error("the resumed child ran without its worktree")
	}
	if _, err := os.Stat(cleanPath); !os.IsNotExist(err) {
		t.Errorf("worktree not removed after the resumed child settled: %v", err)
	}
	// Listing state: git is the authority.
	if st := subagent.InspectWorktree(ctx, worktree.Git{Env: gitEnv}, subagent.WorktreeRecord{Repo: repo, Path: editPath, Branch: "acp-agent/" + ids["edit"], Base: runGit(t, repo, "rev-parse", "HEAD")}); !st.Present || st.Changes.Summary != "1 file changed, 1 insertion(+)" {
		t.Errorf("kept worktree state %+v", st)
	}
}

// TestWorktreeIsolationRefused: outside a git repository, and without git
// support wired, an isolated start fails with ISOLATION_FAILED and leaves
// no child session and no worktree.
func TestWorktreeIsolationRefused(t *testing.T) {
	ctx := testCtx(t)
	for _, tt := range []struct {
		name string
		wts  subagent.Worktrees
		repo bool
		want string
	}{
		{"not a repository", worktree.Git{Env: gitEnv}, false, "needs a git repository"},
		{"no git support", nil, true, "not available"},
		{"git fails", worktree.Git{Env: gitEnv, Path: "/nonexistent/git"}, true, "could not create the worktree"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := filepath.EvalSymlinks(t.TempDir())
			if tt.repo {
				dir = gitRepo(t)
			}
			st, ps := worktreeStack(t, dir, newScript(), tt.wts, 0)
			parent := st.NewParent(t, "parent")
			_, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
				Provider: "spawn", Label: "x", Prompt: text("task"), Parent: parent, Isolation: subagent.IsolationWorktree,
			})
			if !errcode.Has(err, subagent.CodeIsolationFailed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %s containing %q", err, subagent.CodeIsolationFailed, tt.want)
			}
			entries, err := durable{ps}.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Header.ID != "parent" {
					t.Errorf("a child session was left behind: %s", e.Header.ID)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".acp-agent")); !os.IsNotExist(err) {
				t.Errorf(".acp-agent left behind: %v", err)
			}
			if st.Runtime.RunningBackground("parent") != 0 {
				t.Errorf("a background slot is still taken")
			}
		})
	}
}

// TestBackgroundQueue: with a limit of 2, a third start waits (reported to
// its caller and listed as queued), starts when a slot frees, and a
// cancelled queued start leaves no session, no slot and no queue entry.
func TestBackgroundQueue(t *testing.T) {
	ctx := testCtx(t)
	g1, g2 := newGate(), newGate()
	sc := newScript().add("one", g1.reply("done one")).add("two", g2.reply("done two")).text("three", "done three").
		text("main", "NOTED", "NOTED", "NOTED", "NOTED")
	st, ps := worktreeStack(t, t.TempDir(), sc, nil, 2)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	one, _ := startChild(t, ctx, st.Runtime, parent, "one")
	startChild(t, ctx, st.Runtime, parent, "two")
	g1.waitEntered(t, ctx)
	g2.waitEntered(t, ctx)
	if n := st.Runtime.RunningBackground("parent"); n != 2 {
		t.Fatalf("running = %d", n)
	}

	// A cancelled queued start.
	cctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var queuedAt [][2]int
	errc := make(chan error, 1)
	go func() {
		_, _, err := st.Runtime.StartContinuable(cctx, subagent.ContinuableSpec{
			Provider: "spawn", Label: "cancelled", Prompt: text("task"), Parent: parent,
			OnQueued: func(pos, running int) {
				mu.Lock()
				queuedAt = append(queuedAt, [2]int{pos, running})
				mu.Unlock()
				cancel()
			},
		})
		errc <- err
	}()
	if err := <-errc; err == nil || cctx.Err() == nil {
		t.Fatalf("cancelled queued start: err = %v", err)
	}
	if q := st.Runtime.Queued("parent"); len(q) != 0 {
		t.Fatalf("queue after cancel = %+v", q)
	}
	if len(queuedAt) != 1 || queuedAt[0] != [2]int{1, 2} {
		t.Fatalf("OnQueued calls %v", queuedAt)
	}
	entries, _ := durable{ps}.List(ctx)
	if len(entries) != 3 {
		t.Fatalf("sessions after a cancelled queued start: %d, want parent and two children", len(entries))
	}

	// A queued start that waits for a slot.
	queued := make(chan struct{})
	started := make(chan string, 1)
	go func() {
		id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
			Provider: "spawn", Label: "three", Prompt: text("task"), Parent: parent,
			OnQueued: func(int, int) { close(queued) },
		})
		if err != nil {
			t.Error(err)
		}
		started <- id
	}()
	select {
	case <-queued:
	case <-ctx.Done():
		t.Fatal("the third start never queued")
	}
	q := st.Runtime.Queued("parent")
	if len(q) != 1 || q[0].Label != "three" || q[0].Position != 1 {
		t.Fatalf("queued = %+v", q)
	}
	select {
	case id := <-started:
		t.Fatalf("the third start did not wait: %s", id)
	default:
	}
	g1.open()
	lc.waitEnds(t, ctx, one, 1)
	id := <-started
	if id != q[0].ID {
		t.Errorf("started %s, queued as %s", id, q[0].ID)
	}
	lc.waitEnds(t, ctx, id, 1)
	g2.open()
	if len(st.Runtime.Queued("parent")) != 0 {
		t.Error("queue not empty")
	}
}

// queueAndWorktrees is the runtime's listing side as list_agents sees it:
// statuses, the queue and worktree states.
type queueAndWorktrees struct {
	statusMap
	queued []subagent.QueuedStart
	states map[string]subagent.WorktreeState
}

func (q queueAndWorktrees) Queued(parentID string) []subagent.QueuedStart {
	if parentID != "parent" {
		return nil
	}
	return q.queued
}

func (q queueAndWorktrees) WorktreeState(_ context.Context, rec subagent.WorktreeRecord) subagent.WorktreeState {
	return q.states[rec.Path]
}

// TestListAgentsShowsQueuedAndWorktrees: list_agents lists starts waiting
// for a slot as queued (a settled child whose message waits to resume it
// is its own row, marked queued), and an isolated child with its
// worktree's state.
func TestListAgentsShowsQueuedAndWorktrees(t *testing.T) {
	kept := &subagent.WorktreeRecord{Repo: "/r", Path: "/r/.acp-agent/worktrees/kept", Branch: "acp-agent/kept", Base: "b"}
	gone := &subagent.WorktreeRecord{Repo: "/r", Path: "/r/.acp-agent/worktrees/gone", Branch: "acp-agent/gone", Base: "b"}
	l := &stubLister{children: []subagent.ListEntry{
		{Kind: subagent.KindChild, ID: "kept", Mode: subagent.ModeContinuable, Label: "keeper", Activity: subagent.ActivityInactive, Worktree: kept},
		{Kind: subagent.KindChild, ID: "gone", Mode: subagent.ModeContinuable, Label: "cleaner", Activity: subagent.ActivityInactive, Worktree: gone},
		{Kind: subagent.KindChild, ID: "plain", Mode: subagent.ModeContinuable, Label: "plain", Activity: subagent.ActivityInactive},
	}}
	agents := queueAndWorktrees{
		statusMap: statusMap{},
		queued: []subagent.QueuedStart{{ID: "waiting", ParentID: "parent", Label: "fifth", Position: 1},
			{ID: "plain", ParentID: "parent", Label: "plain", Position: 2, Resume: true}},
		states: map[string]subagent.WorktreeState{
			kept.Path: {WorktreeRecord: *kept, Present: true, Changes: worktree.Changes{Changed: true, Summary: "1 file changed, 1 insertion(+)"}},
			gone.Path: {WorktreeRecord: *gone},
		},
	}
	res := runListAgents(t, subagent.NewListAgents(l, agents), t.Context(), `{}`, catCaller("parent"))
	want := "kept [ready] — keeper (worktree /r/.acp-agent/worktrees/kept on branch acp-agent/kept: 1 file changed, 1 insertion(+))\n" +
		"gone [ready] — cleaner (worktree removed with its branch acp-agent/gone: it made no changes)\n" +
		"plain [queued] — plain\n" +
		"waiting [queued] — fifth"
	if got := resultText(res); got != want {
		t.Fatalf("text\n%s\nwant\n%s", got, want)
	}
	wantJSON(t, res.Raw, `[
		{"kind":"child","id":"kept","label":"keeper","status":"ready","worktree":"worktree /r/.acp-agent/worktrees/kept on branch acp-agent/kept: 1 file changed, 1 insertion(+)"},
		{"kind":"child","id":"gone","label":"cleaner","status":"ready","worktree":"worktree removed with its branch acp-agent/gone: it made no changes"},
		{"kind":"child","id":"plain","label":"plain","status":"queued"},
		{"kind":"child","id":"waiting","label":"fifth","status":"queued"}]`)
}

// TestDescriptorWorktreeRoundTrip: the worktree record survives the
// descriptor's write and strict read; a record without isolation, or
// isolation without a record, is refused both ways.
func TestDescriptorWorktreeRoundTrip(t *testing.T) {
	rec := &subagent.WorktreeRecord{Repo: "/r", Path: "/r/.acp-agent/worktrees/c", Branch: "acp-agent/c", Base: "abc"}
	d := subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "x", Isolation: subagent.IsolationWorktree, Worktree: rec}
	raw, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	got, err := subagent.ParseDescriptor(raw)
	if err != nil || got == nil || got.Isolation != subagent.IsolationWorktree || *got.Worktree != *rec {
		t.Fatalf("parsed %+v %v from %s", got, err, raw)
	}
	// A one-shot (foreground) child records its worktree too.
	one := subagent.Descriptor{Mode: subagent.ModeOneShot, Provider: "spawn", Isolation: subagent.IsolationWorktree, Worktree: rec}
	if raw, err = one.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if got, err = subagent.ParseDescriptor(raw); err != nil || got == nil || got.Mode != subagent.ModeOneShot || *got.Worktree != *rec {
		t.Fatalf("one-shot parsed %+v %v from %s", got, err, raw)
	}
	for _, bad := range []subagent.Descriptor{
		{Mode: subagent.ModeContinuable, Provider: "spawn", Worktree: rec},
		{Mode: subagent.ModeContinuable, Provider: "spawn", Isolation: subagent.IsolationWorktree},
		{Mode: subagent.ModeOneShot, Provider: "spawn", Isolation: subagent.IsolationWorktree},
	} {
		if _, err := bad.Snapshot(); err == nil {
			t.Errorf("Snapshot accepted %+v", bad)
		}
	}
	for _, payload := range []string{
		`{"version":2,"mode":"continuable","provider":"p","label":"x","isolation":"worktree"}`,
		`{"version":2,"mode":"continuable","provider":"p","label":"x","worktree":{"repo":"/r","path":"/p","branch":"b","base":"c"}}`,
		`{"version":2,"mode":"continuable","provider":"p","label":"x","isolation":"sandbox"}`,
		`{"version":2,"mode":"continuable","provider":"p","label":"x","isolation":"worktree","worktree":{"repo":"/r","path":"/p","branch":"b"}}`,
		`{"version":2,"mode":"continuable","provider":"p","label":"x","isolation":"worktree","worktree":{"repo":"/r","path":"/p","branch":"b","base":"c","x":"y"}}`,
		`{"version":2,"mode":"one-shot","provider":"p","isolation":"worktree"}`,
	} {
		if d, err := subagent.ParseDescriptor([]byte(payload)); err == nil {
			t.Errorf("ParseDescriptor accepted %s as %+v", payload, d)
		}
	}
	// The identity projection carries the record to listings.
	id, err := subagent.DecodeIdentity([]byte(`{"mode":"continuable","label":"x","worktree":{"repo":"/r","path":"/p","branch":"b","base":"c"},"seq":3}`))
	if err != nil || id == nil || id.Worktree == nil || id.Worktree.Path != "/p" {
		t.Fatalf("identity %+v %v", id, err)
	}
	enc, _ := id.MarshalJSON()
	if back, err := subagent.DecodeIdentity(enc); err != nil || *back.Worktree != *id.Worktree {
		t.Fatalf("identity round trip %s: %+v %v", enc, back, err)
	}
}

// TestForegroundWorktreeIsolation: a foreground (one-shot) child started
// with isolation worktree, by the call or by its agent definition, works
// in its own worktree, recorded in its descriptor (its creation seed)
// before its first turn and its cwd (so its workspace boundary) from the
// start; when the call returns, an untouched worktree is removed and a
// changed one is kept and reported in the tool result (path, branch,
// diffstat, also in the raw output); the parent's tree stays clean.
func TestForegroundWorktreeIsolation(t *testing.T) {
	ctx := testCtx(t)
	repo := gitRepo(t)
	sc := newScript().text("clean", "nothing to do").text("edit", "edited a.txt")
	st, ps := worktreeStack(t, repo, sc, worktree.Git{Env: gitEnv}, 0)
	parent := st.NewParent(t, "parent")
	set := writeAgents(t, t.TempDir(), map[string]string{
		"editor.md": "---\ndescription: Edits in a worktree\nmode: foreground\nisolation: worktree\n---\n",
	})
	d := subagent.NewSubagentToolWith(st.Runtime, &subagent.AgentChoices{Set: set})
	for _, tt := range []struct {
		label string
		args  map[string]any
		kept  bool
	}{
		{"clean", map[string]any{"description": "clean", "prompt": "look", "run_in_background": false, "isolation": "worktree"}, false},
		{"edit", map[string]any{"description": "edit", "prompt": "edit a.txt", "agent": "editor"}, true},
	} {
		t.Run(tt.label, func(t *testing.T) {
			res, err := invoke(t, d, parent, tt.args)
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			raw := res.Raw.(map[string]any)
			id, _ := raw["runId"].(string)
			path := filepath.Join(repo, ".acp-agent", "worktrees", id)
			branch := "acp-agent/" + id
			h, evs := persistedEvents(t, ctx, durable{ps}, id)
			desc, err := subagent.FoldFirst(evs[h.SeedLength:])
			if err != nil || desc == nil || desc.Mode != subagent.ModeOneShot || desc.Worktree == nil ||
				desc.Worktree.Path != path || desc.Worktree.Branch != branch || h.Cwd != path {
				t.Fatalf("descriptor %+v (worktree %+v) %v, cwd %s; want worktree %s", desc, desc.Worktree, err, h.Cwd, path)
			}
			if n := subagenttest.Count(evs, session.TypeDescriptor); n != 1 {
				t.Errorf("%d descriptors, want 1", n)
			}
			for _, ev := range evs {
				if ev.Type == session.TypeTurnStart {
					t.Fatal("the first turn started before the descriptor was recorded")
				}
				if ev.Type == session.TypeDescriptor {
					break
				}
			}
			text := session.JoinText(res.Content, "\n")
			wt, _ := raw["worktree"].(map[string]any)
			if wt == nil || wt["path"] != path || wt["branch"] != branch || wt["kept"] != tt.kept {
				t.Errorf("raw worktree = %v", wt)
			}
			if !tt.kept {
				if !strings.Contains(text, "Its worktree made no changes and was removed (branch "+branch+" deleted).") {
					t.Errorf("result:\n%s", text)
				}
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("untouched worktree still there: %v", err)
				}
				if out := runGit(t, repo, "branch", "--list", branch); out != "" {
					t.Errorf("untouched branch kept: %q", out)
				}
				return
			}
			want := "Its work is committed on branch " + branch + " (commit " + runGit(t, repo, "rev-parse", branch)[:12] + "), worktree kept at " + path + ": 1 file changed, 1 insertion(+)."
			if !strings.Contains(text, want) || !strings.Contains(text, "a.txt | 1 +") || !strings.HasPrefix(text, "edited a.txt") {
				t.Errorf("result:\n%s\nwant the output, then %q and the diffstat", text, want)
			}
			if wt["summary"] != "1 file changed, 1 insertion(+)" || !strings.Contains(wt["diffstat"].(string), "a.txt | 1 +") || wt["commit"] != runGit(t, repo, "rev-parse", branch) {
				t.Errorf("raw worktree = %v", wt)
			}
			if data, err := os.ReadFile(filepath.Join(path, "a.txt")); err != nil || string(data) != "one\nedited\n" {
				t.Errorf("kept worktree's a.txt %q %v", data, err)
			}
		})
	}
	if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "one\n" {
		t.Errorf("the parent's a.txt changed: %q", data)
	}
	if s := runGit(t, repo, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("parent status not clean:\n%s", s)
	}
}

// TestForegroundWorktreeIsolationRefused: outside a git repository an
// isolated foreground call fails with ISOLATION_FAILED and leaves no
// child session and no worktree.
func TestForegroundWorktreeIsolationRefused(t *testing.T) {
	ctx := testCtx(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	st, ps := worktreeStack(t, dir, newScript(), worktree.Git{Env: gitEnv}, 0)
	parent := st.NewParent(t, "parent")
	_, err := invoke(t, subagent.NewSubagentTool(st.Runtime), parent,
		map[string]any{"description": "x", "prompt": "p", "run_in_background": false, "isolation": "worktree"})
	if !errcode.Has(err, subagent.CodeIsolationFailed) || !strings.Contains(err.Error(), "needs a git repository") {
		t.Fatalf("err = %v, want %s", err, subagent.CodeIsolationFailed)
	}
	entries, err := durable{ps}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Header.ID != "parent" {
			t.Errorf("a child session was left behind: %s", e.Header.ID)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".acp-agent")); !os.IsNotExist(err) {
		t.Errorf(".acp-agent left behind: %v", err)
	}
}
