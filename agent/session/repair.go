package session

// This file defines the repair of an interrupted final turn: the closing
// events that end a log cut off inside a turn (a crash, a kill). They are
// conversation vocabulary, so they live here; storage only commits them
// (persistence.Store.Load) or shows them (Inspect). See
// shared/spec/subagent-contract.md §7 (Appendix A).

// Tool-result error codes of the closing events.
const (
	// CodeToolOutcomeUnknown: a tool/call was recorded but no tool/result.
	CodeToolOutcomeUnknown = "TOOL_OUTCOME_UNKNOWN"
	// CodeToolNotStarted: the model asked for a call (a tool-call block of
	// an assistant/message) but no tool/call was recorded.
	CodeToolNotStarted = "TOOL_NOT_STARTED"
)

// Texts the model sees in the closing error tool results.
const (
	textOutcomeUnknown = "Error: tool call outcome unknown after an interruption"
	textNotStarted     = "Error: tool call was not started before an interruption"
)

// CloseInterruptedTurn returns the events that close an interrupted final
// turn of the log of session id (nil when the log does not end inside a
// turn): a failed session/compaction per compaction started and not
// closed (InterruptedCompaction), one error tool/result per unanswered call (TOOL_OUTCOME_UNKNOWN
// after a tool/call, TOOL_NOT_STARTED for a tool-call block never
// dispatched), step/end if a step is open, then turn/end
// {kind:"interrupted"}. They continue seq and reuse the last event's time,
// and their message ids derive from (id, seq), so two repairs of the same
// log are identical. A malformed payload inside the open turn is reported
// as the *FormatError of DecodeData, with its seq.
func CloseInterruptedTurn(id string, events []Event) ([]Event, error) {
	if !OpenTurn(events) {
		return nil, nil
	}
	start := len(events) - 1
	for events[start].Type != TypeTurnStart {
		start--
	}
	td, err := DecodeData[TurnData](events[start])
	if err != nil {
		return nil, err
	}
	var open openTurnScan
	for _, ev := range events[start+1:] {
		if err := open.observe(ev); err != nil {
			return nil, err
		}
	}
	compactions, err := OpenCompactions(events[start+1:])
	if err != nil {
		return nil, err
	}
	c := closing{id: id, turn: td.Turn, last: events[len(events)-1], seq: int64(len(events))}
	// A compaction runs on the loop goroutine between a step's requests,
	// so it closes first, before the results of the calls that preceded it.
	for _, d := range compactions {
		c.add(TypeCompaction, InterruptedCompaction(d), nil)
	}
	for _, call := range open.calls {
		if !open.answered[call.id] {
			c.result(call)
		}
	}
	if open.step != nil {
		c.add(TypeStepEnd, StepData{Turn: open.step.Turn, Step: open.step.Step}, nil)
	}
	c.add(TypeTurnEnd, TurnEndData{Turn: td.Turn, Reason: TurnEndReason{Kind: TurnEndInterrupted}}, nil)
	return c.out, nil
}

// pendingCall is a tool call of the open turn, in order of first mention.
type pendingCall struct {
	id      string
	step    int
	source  int64 // seq of the tool/call, else of the assistant/message
	started bool  // a tool/call event exists
}

// openTurnScan follows the events of an open turn: the calls mentioned,
// those answered, and the open step.
type openTurnScan struct {
	calls    []*pendingCall
	byID     map[string]*pendingCall
	answered map[string]bool
	step     *StepData
}

func (o *openTurnScan) observe(ev Event) error {
	switch ev.Type {
	case TypeStepStart:
		d, err := DecodeData[StepData](ev)
		if err != nil {
			return err
		}
		o.step = &d
	case TypeStepEnd:
		o.step = nil
	case TypeAssistantMessage:
		d, err := DecodeData[AssistantMessageData](ev)
		if err != nil {
			return err
		}
		for _, b := range d.Message.Content {
			if b.Type == BlockToolCall {
				o.mention(b.ID, d.Step, ev.Seq, false)
			}
		}
	case TypeToolCall:
		d, err := DecodeData[ToolCallData](ev)
		if err != nil {
			return err
		}
		o.mention(d.CallID, d.Step, ev.Seq, true)
	case TypeToolResult:
		d, err := DecodeData[ToolResultData](ev)
		if err != nil {
			return err
		}
		o.answer(d.Message)
	}
	return nil
}

func (o *openTurnScan) mention(callID string, step int, seq int64, started bool) {
	if callID == "" {
		return
	}
	if o.byID == nil {
		o.byID = map[string]*pendingCall{}
	}
	c := o.byID[callID]
	if c == nil {
		c = &pendingCall{id: callID, step: step, source: seq}
		o.byID[callID] = c
		o.calls = append(o.calls, c)
	}
	if started && !c.started {
		c.started, c.step, c.source = true, step, seq
	}
}

func (o *openTurnScan) answer(m Message) {
	if o.answered == nil {
		o.answered = map[string]bool{}
	}
	if m.Source.CallID != "" {
		o.answered[m.Source.CallID] = true
	}
	for _, b := range m.Content {
		if b.Type == BlockToolResult {
			o.answered[b.ToolCallID] = true
		}
	}
}

// closing accumulates the closing events.
type closing struct {
	id   string
	turn int
	last Event
	seq  int64
	out  []Event
}

func (c *closing) add(typ string, data any, opts func(*Event)) {
	ev := Event{Type: typ, Seq: c.seq, Time: c.last.Time, Data: MustData(data)}
	if opts != nil {
		opts(&ev)
	}
	c.out = append(c.out, ev)
	c.seq++
}

// result adds the error tool/result of an unanswered call.
func (c *closing) result(call *pendingCall) {
	code, text := CodeToolOutcomeUnknown, textOutcomeUnknown
	if !call.started {
		code, text = CodeToolNotStarted, textNotStarted
	}
	msg := Message{
		ID:   HashID(c.id+"/recovery", c.seq),
		Role: RoleUser,
		Content: []Block{{
			Type:       BlockToolResult,
			ToolCallID: call.id,
			Content:    []Block{Text(text)},
			IsError:    true,
		}},
		Source: Source{Kind: SourceTool, CallID: call.id},
	}
	c.add(TypeToolResult, ToolResultData{
		Turn:    c.turn,
		Step:    call.step,
		Message: msg,
		Error:   &ErrorInfo{Message: text, Code: code},
	}, func(ev *Event) {
		ev.SurfaceOp = AppendOp
		ev.SourceEventSeqs = []int64{call.source}
	})
}
