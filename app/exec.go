package app

// This file runs one headless prompt against the composition (the engine
// of "acp-agent exec", whose command line is in app/cli): the real ACP
// server in process over a pair of pipes, driven by package headless.

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app/headless"
)

// Exec runs the headless client against a's ACP server over pipes, with
// the persistence flusher, and returns when the server has shut down.
func (a *App) Exec(ctx context.Context, o headless.Options, waitChildren bool) (ExecResult, error) {
	a.sweepLeftovers()
	since := time.Now().UnixMilli()
	fctx, stopFlush := context.WithCancel(ctx)
	flushed := make(chan error, 1)
	go func() { flushed <- a.Persist.Run(fctx) }()

	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := a.Serve(context.WithoutCancel(ctx), toAgentR, fromAgentW)
		fromAgentW.Close()
		toAgentR.Close()
		served <- err
	}()
	if waitChildren {
		o.AfterTurn = a.waitSettled
	}
	mark, started := 0, false
	o.BeforePrompt = func(id string) {
		started = true
		if s, ok := a.Sessions.Get(id); ok {
			if evs, err := s.Events(); err == nil {
				mark = len(evs)
			}
		}
	}
	o.Answer = func(id string) (string, bool) { return a.lastAnswer(id, mark) }
	hres, err := headless.Run(ctx, pipeStream{fromAgentR, toAgentW}, o)
	res := ExecResult{Result: hres, Started: started}
	toAgentW.Close()
	serr := <-served
	fromAgentR.Close()
	stopFlush()
	if ferr := <-flushed; ferr != nil && !errors.Is(ferr, context.Canceled) {
		serr = errors.Join(serr, ferr)
	}
	if err == nil && serr != nil {
		err = serr
	}
	if res.SessionID != "" && started {
		res.Report = a.report(context.WithoutCancel(ctx), res.SessionID, mark, since)
	}
	return res, err
}

// pipeStream is the client's side of the two pipes; closing it closes the
// agent's input only, so the agent's last frames are still read.
type pipeStream struct {
	io.Reader
	w *io.PipeWriter
}

func (p pipeStream) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeStream) Close() error                { return p.w.Close() }

// waitSettled waits until session root has no background subagent left
// (resident, running or queued) and is idle, its updates on the wire. The
// check order matters: a settling child's slot is freed after its notice
// reached the parent (which then runs), so once no slot is taken the
// parent's status tells whether a notice's turn is still to come.
func (a *App) waitSettled(ctx context.Context, root string) error {
	changed := make(chan struct{}, 1)
	unobserve := a.Sessions.Observe(&session.Observer{Appended: func(*session.Session, session.Event) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	defer unobserve()
	// The observer wakes the check; the tick covers state that changes
	// without an event (a slot freed after the last append).
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if a.settled(root) {
			return a.Server.FlushUpdates(ctx)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-changed:
		case <-tick.C:
		}
	}
}

func (a *App) settled(root string) bool {
	rt := a.Subagents
	if rt.RunningBackground(root) > 0 || rt.ResidentCount() > 0 || len(rt.Queued(root)) > 0 {
		return false
	}
	ag, ok := a.Agents.Get(root)
	return !ok || ag.Status() == agent.StatusIdle && ag.ParkedCount() == 0
}

// lastAnswer is the text of the last assistant message of session id's
// last turn after event mark (where the run began), from its log (the
// authority, whatever reached the wire). Not ok when there is none (a
// slash command's output is not an assistant message): the streamed text
// stands.
func (a *App) lastAnswer(id string, mark int) (string, bool) {
	s, ok := a.Sessions.Get(id)
	if !ok {
		return "", false
	}
	events, err := s.Events()
	if err != nil || mark > len(events) {
		return "", false
	}
	start := mark
	for i := len(events) - 1; i >= mark; i-- {
		if events[i].Type == session.TypeTurnStart {
			start = i
			break
		}
	}
	var b strings.Builder
	for _, blk := range agent.FinalOutput(events[start:]) {
		if blk.Type == session.BlockText {
			b.WriteString(blk.Text)
		}
	}
	return b.String(), b.Len() > 0
}
