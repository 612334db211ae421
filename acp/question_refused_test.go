package acp_test

// This file tests that a child's question refused at its deadline is
// recorded in the child's own log (delegation.TypeQuestionRefused), so
// every listing says "question refused: <reason>" for that child: the
// list_agents tool, /agents, `acp-agent agents` and subagents/list, live
// and after a restart (when the in-memory held-question state is gone).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/subagent"
)

type callerID string

func (c callerID) SessionID() string { return string(c) }

// refusalListings is what each listing of root says of child.
func refusalListings(ctx context.Context, t *testing.T, e *wsEnv, root, child string) map[string]string {
	t.Helper()
	out := map[string]string{}
	res, err := subagent.NewListAgents(e.app.Subagents, e.app.Subagents).Execute(ctx, tool.Invocation{Caller: callerID(root)})
	if err != nil {
		t.Fatalf("list_agents: %v", err)
	}
	out["list_agents"] = session.JoinText(res.Content, "\n")
	entries, err := e.app.Catalog.ListDescendants(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := app.WriteTree(ctx, &b, root, entries, nil); err != nil {
		t.Fatal(err)
	}
	out["tree"] = b.String()
	before := len(e.rec.snapshot(root))
	if _, err := e.prompt(ctx, root, "/agents"); err != nil {
		t.Fatalf("/agents: %v", err)
	}
	out["/agents"] = strings.Join(transcript(e.rec.snapshot(root)[before:]), "\n")
	q := listedQuestion(ctx, t, e.env, root, child)
	out["subagents/list"] = fmt.Sprint(q)
	if q != nil && q["state"] == acp.QuestionRefused {
		out["subagents/list"] = fmt.Sprintf("question refused: %v", q["reason"])
	}
	return out
}

// TestHeldQuestion_RefusalListedDurably: a background child's question
// refused at its deadline is in the child's log, and every listing shows
// "question refused: <reason>" for it, before and after a restart.
func TestHeldQuestion_RefusalListedDurably(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	fire := make(chan time.Time)
	gate := &gateModel{Model: loadScript(t, heldScript), key: "Writer", release: make(chan struct{})}
	c := newWSClient(false, false, "allow_once")
	e := startSubagents(t, dir, gate, c, clientPlain, func(cfg *app.Config) {
		cfg.Testing.QuestionAfter = func(time.Duration) <-chan time.Time { return fire }
	})
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	child := findChild(t, e.env, id)
	close(gate.release)
	poll(ctx, t, "the child's question is held", func() bool { return e.app.Server.Questions().Held(id) == 1 })
	close(fire)
	awaitSettled(ctx, t, e.env, child)

	const want = "question refused: nobody answered it within 10m0s"
	check := func(when string, got map[string]string) {
		t.Helper()
		for _, k := range []string{"list_agents", "tree", "/agents", "subagents/list"} {
			if !strings.Contains(got[k], want) {
				t.Errorf("%s: %s shows %q, want %q", when, k, got[k], want)
			}
		}
	}
	check("live", refusalListings(ctx, t, e, id, child))
	// The record is in the child's own log on disk.
	raw, err := os.ReadFile(filepath.Join(e.app.Persist.Dir(), child+".jsonl"))
	if err != nil || !strings.Contains(string(raw), `"`+delegation.TypeQuestionRefused+`"`) {
		t.Fatalf("the child's log has no %s record (%v)", delegation.TypeQuestionRefused, err)
	}
	e.stop()

	// acp-agent agents, from disk.
	if line := cli(t, dir, "agents", id); !strings.Contains(line, child) || !strings.Contains(line, want) {
		t.Errorf("acp-agent agents shows %q, want %q on %s", line, want, child)
	}

	// A new process: nothing held in memory, the log says it.
	e2 := startSubagents(t, dir, loadScript(t, heldScript), newWSClient(false, false), clientPlain)
	if _, ok := e2.app.Server.Questions().State(child); ok {
		t.Fatal("the new process has an in-memory question state")
	}
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	check("after a restart", refusalListings(ctx, t, e2, id, child))
}
