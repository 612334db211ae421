package agent

// This file streams a step's model call into the log (assistant/chunk)
// and records the reply it assembles (assistant/message).

import (
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// reply is one streamed model reply: its content (model.Accumulator, the
// one the recorder uses too), the log records of its chunks and how the
// stream ended.
type reply struct {
	model.Accumulator
	chunkSeqs []int64
	err       error       // the stream's error, if it failed
	route     model.Route // the route the request was sent with
}

func (r *reply) streamed() bool { return len(r.chunkSeqs) > 0 }

// stream runs the model call of a step, appending every chunk as
// assistant/chunk. The returned error is a log write failure; the model's
// own failure is in reply.err.
func (a *Agent) stream(t *turnState, step int, req model.Request) (*reply, error) {
	r := &reply{}
	for c, err := range a.opts.Model.Stream(t.ctx, req) {
		if err != nil {
			r.err = err
			break
		}
		ev, aerr := a.sess.Append(session.TypeAssistantChunk, session.AssistantChunkData{Turn: t.num, Step: step, Chunk: c})
		if aerr != nil {
			return r, aerr
		}
		r.chunkSeqs = append(r.chunkSeqs, ev.Seq)
		r.Add(c)
		if t.ctx.Err() != nil {
			break
		}
		if err := a.writeErr(); err != nil {
			// Nothing more of this answer can be saved, so none of it is
			// shown: stop the model rather than stream unseen.
			a.log.Error("answer stopped: the session log cannot be written", "err", err)
			return r, err
		}
	}
	for _, c := range r.Calls() {
		if c.ID == "" {
			c.ID = a.sess.NewID()
		}
	}
	return r, nil
}

func (a *Agent) appendAssistant(t *turnState, step int, r *reply, interrupted bool) (session.Event, error) {
	data := session.AssistantMessageData{
		Turn: t.num, Step: step,
		Message: session.Message{
			ID: a.sess.NewID(), Role: session.RoleAssistant,
			Content: r.Content(interrupted),
			Source:  session.Source{Kind: session.SourceModel, Provider: r.route.Provider, Model: r.route.Model},
		},
		Usage:       r.Usage(),
		Interrupted: interrupted,
	}
	if !interrupted {
		data.Finish = r.FinishReason()
	}
	opts := []session.AppendOption{session.WithSurface(session.AppendOp)}
	if len(r.chunkSeqs) > 0 {
		opts = append(opts, session.WithSources(r.chunkSeqs...))
	}
	return a.sess.Append(session.TypeAssistantMessage, data, opts...)
}
