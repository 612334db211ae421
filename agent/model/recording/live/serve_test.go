package live

import (
	"context"
	"io"
	"iter"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/recording"
	"github.com/acp-agent/acp-agent/agent/session"
)

// hangingModel streams one text chunk, then waits for its context.
type hangingModel struct{}

func (hangingModel) Stream(ctx context.Context, _ model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		if !yield(session.Chunk{Type: session.ChunkText, Text: "thinking"}, nil) {
			return
		}
		<-ctx.Done()
		yield(session.Chunk{}, ctx.Err())
	}
}

// TestServeRecorderSteps: the frames of a served connection become the
// scenario's client steps, in order: a prompt answered before the
// client's next frame is a plain prompt; one the client cancelled while
// its model call ran is sent in the background, the cancel waits for that
// call and the answer is awaited; permission answers go to the prompt
// they came after; a mode change is a set_mode step; turns of the
// session's own (a settlement notice's) ended or running when a prompt
// comes are waited for; frames of other sessions are left out.
func TestServeRecorderSteps(t *testing.T) {
	type frame struct {
		agent bool // written by the agent, else sent by the client
		line  string
		// inFlight, when set, starts a model call of the root before the
		// frame and ends it after.
		inFlight bool
		// turn, when set, is the root's turn state the observer saw
		// before the frame.
		turn *turnState
	}
	call := func(n int) *int { return &n }
	const newSession = `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`
	const created = `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S"}}`
	for _, tc := range []struct {
		name   string
		frames []frame
		want   []recording.Step
	}{
		{
			name: "two prompts, a mode change and a permission answer",
			frames: []frame{
				{line: newSession}, {agent: true, line: created},
				{line: `{"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":"S","modeId":"plan"}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":2,"result":{}}`},
				{line: `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"one"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"S"}}`},
				{line: `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
				{line: `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"two"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`},
			},
			want: []recording.Step{
				{Op: recording.OpSetMode, Mode: "plan"},
				{Op: recording.OpPrompt, Text: "one", Permissions: []string{"allow-once"}},
				{Op: recording.OpPrompt, Text: "two"},
			},
		},
		{
			name: "a prompt cancelled while its model call runs",
			frames: []frame{
				{line: newSession}, {agent: true, line: created},
				{line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"forever"}]}}`},
				{line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}`, inFlight: true},
				{agent: true, line: `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`},
				{line: `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"again"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
			},
			want: []recording.Step{
				{Op: recording.OpPrompt, Text: "forever", Background: true},
				{Op: recording.OpWait, Wait: recording.Wait{ModelCall: call(0)}},
				{Op: recording.OpCancel},
				{Op: recording.OpAwaitPrompt},
				{Op: recording.OpPrompt, Text: "again"},
			},
		},
		{
			name: "a notice's turn running when the next prompt comes",
			frames: []frame{
				{line: newSession}, {agent: true, line: created},
				{line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"one"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`},
				{turn: &turnState{open: true, ended: 1}, line: `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"two"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
				{turn: &turnState{ended: 3}, line: `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"three"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`},
				{turn: &turnState{ended: 5}, line: `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"four"}]}}`},
			},
			want: []recording.Step{
				{Op: recording.OpPrompt, Text: "one"},
				{Op: recording.OpWait, Wait: recording.Wait{TurnEnded: 2, Idle: true}},
				{Op: recording.OpPrompt, Text: "two"},
				{Op: recording.OpPrompt, Text: "three"},
				{Op: recording.OpWait, Wait: recording.Wait{TurnEnded: 5, Idle: true}},
				{Op: recording.OpPrompt, Text: "four", Background: true},
			},
		},
		{
			name: "a prompt answered with an error",
			frames: []frame{
				{line: newSession}, {agent: true, line: created},
				{line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"fails"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"turn failed: provider exploded","data":{"code":"TURN_FAILED"}}}`},
				{line: `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"works"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
			},
			want: []recording.Step{
				{Op: recording.OpPrompt, Text: "fails", ExpectError: true},
				{Op: recording.OpPrompt, Text: "works"},
			},
		},
		{
			name: "a cancelled prompt answered with an error",
			frames: []frame{
				{line: newSession}, {agent: true, line: created},
				{line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"forever"}]}}`},
				{line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}`, inFlight: true},
				{agent: true, line: `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"turn failed"}}`},
			},
			want: []recording.Step{
				{Op: recording.OpPrompt, Text: "forever", Background: true, ExpectError: true},
				{Op: recording.OpWait, Wait: recording.Wait{ModelCall: call(0)}},
				{Op: recording.OpCancel},
				{Op: recording.OpAwaitPrompt, ExpectError: true},
			},
		},
		{
			name: "frames of another session",
			frames: []frame{
				{line: newSession}, {agent: true, line: created},
				{line: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"OTHER"}}`},
				{line: `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"OTHER","prompt":[{"type":"text","text":"elsewhere"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
				{line: `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"here"}]}}`},
				{agent: true, line: `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`},
			},
			want: []recording.Step{{Op: recording.OpPrompt, Text: "here"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewServe(filepath.Join(t.TempDir(), "rec"))
			if err != nil {
				t.Fatal(err)
			}
			m := r.WrapModel(nil, nil)(hangingModel{})
			for _, f := range tc.frames {
				var stop func()
				if f.inFlight {
					ctx, cancel := context.WithCancel(context.Background())
					next, done := iter.Pull2(m.Stream(ctx, model.Request{Caller: model.Caller{SessionID: "S", ScriptKey: "main"}}))
					if _, err, ok := next(); !ok || err != nil {
						t.Fatalf("the model call did not start: %v", err)
					}
					stop = func() { cancel(); next(); done() }
				}
				if f.turn != nil {
					r.Exec.mu.Lock()
					*r.turn("S") = *f.turn
					r.Exec.mu.Unlock()
				}
				if f.agent {
					r.fromAgent([]byte(f.line))
				} else {
					r.fromClient([]byte(f.line))
				}
				if stop != nil {
					stop()
				}
			}
			if got := r.clientSteps(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("steps\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

// BenchmarkServeRecorderTap is the cost --record adds to each line the
// agent writes (a typical session/update: decoded once, nothing kept).
func BenchmarkServeRecorderTap(b *testing.B) {
	r, err := NewServe(filepath.Join(b.TempDir(), "rec"))
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"aab13600-854b-48eb-9055-6a5e5e4bd1f1","update":{"content":{"text":"There are two notes in the file, and both are done.","type":"text"},"sessionUpdate":"agent_message_chunk"}}}` + "\n")
	w := r.TapOut(io.Discard)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}
