package acp_test

import (
	"context"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// noticeModel reports one retry wait through the request, then answers.
type noticeModel struct{}

func (noticeModel) Stream(_ context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		req.Notice(model.Notice{Kind: model.NoticeRetry, Message: "retrying in 4 s (HTTP 429)", Attempt: 1, Delay: 4 * time.Second, Status: 429})
		if yield(session.Chunk{Type: session.ChunkText, Text: "done"}, nil) {
			yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishStop}, nil)
		}
	}
}

// TestRetryNoticeReachesEditor: a retry wait inside the model call is shown
// live as its own thought line, marked in _meta, before the answer; it is
// not logged, so a replay does not repeat it.
func TestRetryNoticeReachesEditor(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), noticeModel{})
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	if _, err := e.prompt(ctx, id, "hi"); err != nil {
		t.Fatal(err)
	}
	ns := e.rec.snapshot(id)
	got := transcript(ns)
	want := []string{"session_info_update title=hi", "agent_thought_chunk \nretrying in 4 s (HTTP 429)\n", "agent_message_chunk done"}
	if !slices.Equal(got, want) {
		t.Fatalf("updates:\n%q\nwant:\n%q", got, want)
	}
	var meta map[string]any
	for _, n := range ns {
		if c := n.Update.AgentThoughtChunk; c != nil {
			meta, _ = c.Meta[acp.MetaNotice].(map[string]any)
		}
	}
	if meta["kind"] != model.NoticeRetry || meta["status"] != float64(429) && meta["status"] != 429 {
		t.Errorf("notice meta = %v", meta)
	}
}
