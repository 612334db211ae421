package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Event types of the log vocabulary (subagent-contract.md §1.2 and
// reference-scenarios.md §f). Readers refuse types outside KnownTypes unless
// the event is marked ignorable.
const (
	TypeTurnStart        = "turn/start"
	TypeTurnEnd          = "turn/end"
	TypeStepStart        = "step/start"
	TypeStepEnd          = "step/end"
	TypeUserMessage      = "user/message"
	TypeAssistantChunk   = "assistant/chunk"
	TypeAssistantMessage = "assistant/message"
	TypeToolCall         = "tool/call"
	TypeToolResult       = "tool/result"
	TypeInboxSpliced     = "agent/inbox/spliced"
	TypeSessionTitle     = "session/title"
	TypeEndSeed          = "session/end-seed"
	TypeDescriptor       = "subagent/descriptor"
	TypeRequestHeader    = "request/header"
	TypeRequestContext   = "request/context"
	TypeApprovalPolicy   = "approval/policy"
	TypeSandboxMode      = "sandbox/mode"
)

// KnownTypes is the set of event types this build understands. An event of
// any other type must carry Ignorable, or the session is unreadable.
var KnownTypes = map[string]bool{
	TypeTurnStart: true, TypeTurnEnd: true, TypeStepStart: true, TypeStepEnd: true,
	TypeUserMessage: true, TypeAssistantChunk: true, TypeAssistantMessage: true,
	TypeToolCall: true, TypeToolResult: true, TypeInboxSpliced: true,
	TypeSessionTitle: true, TypeEndSeed: true, TypeDescriptor: true,
	TypeRequestHeader: true, TypeRequestContext: true, TypeApprovalPolicy: true,
	TypeSandboxMode: true, TypeCompaction: true, TypeCompactionStart: true, TypeSystemPrompt: true,
	TypeRepaired: true, TypeContextWindow: true, TypeNotice: true,
}

// SurfaceTypes are the event types that feed model-visible history. Only
// they may (and must) carry a SurfaceOp.
var SurfaceTypes = map[string]bool{
	TypeUserMessage: true, TypeAssistantMessage: true, TypeToolResult: true,
}

// Event is one record of the append-only log. Seq is contiguous from 0 and
// equals the event's index in the log; Time is Unix epoch milliseconds.
// Data holds the type-specific payload as raw JSON; decode it with
// DecodeData. Key order on disk: type, seq, time, data, sourceEventSeqs,
// surfaceOp, ignorable.
type Event struct {
	Type            string          `json:"type"`
	Seq             int64           `json:"seq"`
	Time            int64           `json:"time"`
	Data            json.RawMessage `json:"data"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs,omitempty"`
	SurfaceOp       *SurfaceOp      `json:"surfaceOp,omitempty"`
	Ignorable       bool            `json:"ignorable,omitempty"`
}

// SurfaceOp says how a surface event changes model-visible history:
// append it, or replace the surface range [Start, End] (event seqs,
// inclusive) with it (compaction). Log events are never deleted.
type SurfaceOp struct {
	Replace    bool
	Start, End int64
}

// AppendOp is the ordinary surface operation.
var AppendOp = &SurfaceOp{}

// MarshalJSON renders "append" or {"op":"replace","start":s,"end":e}.
func (op SurfaceOp) MarshalJSON() ([]byte, error) {
	if !op.Replace {
		return []byte(`"append"`), nil
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Start int64  `json:"start"`
		End   int64  `json:"end"`
	}{"replace", op.Start, op.End})
}

// UnmarshalJSON accepts the two shapes MarshalJSON produces.
func (op *SurfaceOp) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte(`"append"`)) {
		*op = SurfaceOp{}
		return nil
	}
	var r struct {
		Op    string `json:"op"`
		Start *int64 `json:"start"`
		End   *int64 `json:"end"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("surfaceOp: %w", err)
	}
	if r.Op != "replace" || r.Start == nil || r.End == nil || *r.Start < 0 || *r.End < *r.Start {
		return errors.New(`surfaceOp must be "append" or {"op":"replace","start":n,"end":m} with 0 <= start <= end`)
	}
	*op = SurfaceOp{Replace: true, Start: *r.Start, End: *r.End}
	return nil
}

// FormatError reports a log that violates the event format: a seq gap, a
// malformed record, a missing or misplaced surfaceOp, or an unknown required
// event type. Seq is the offending record's position in the log.
type FormatError struct {
	Seq     int64
	Type    string
	Message string
	// Gap marks a record whose seq does not follow the one before it: it
	// holds Got where Seq was expected (events are missing, or its seq
	// field is damaged).
	Gap bool
	Got int64
}

func (e *FormatError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("session log record %d (%s): %s", e.Seq, e.Type, e.Message)
	}
	return fmt.Sprintf("session log record %d: %s", e.Seq, e.Message)
}

// ErrUnsupportedType is wrapped by a FormatError for an unknown event type
// that is not marked ignorable (the SessionFormatUnsupported case).
var ErrUnsupportedType = errors.New("unsupported event type")

// UnsupportedTypeError reports an unknown required event type.
type UnsupportedTypeError struct {
	Seq  int64
	Type string
}

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("session log record %d has unsupported event type %q (not marked ignorable)", e.Seq, e.Type)
}

func (e *UnsupportedTypeError) Unwrap() error { return ErrUnsupportedType }

// ValidateEvent checks one event in isolation against the format rules,
// given the seq it must have.
func ValidateEvent(ev Event, wantSeq int64) error {
	if ev.Seq != wantSeq {
		return &FormatError{Seq: wantSeq, Type: ev.Type, Message: fmt.Sprintf("has seq %d, expected %d (seq must be contiguous from 0)", ev.Seq, wantSeq), Gap: true, Got: ev.Seq}
	}
	if ev.Type == "" {
		return &FormatError{Seq: wantSeq, Message: "has no type"}
	}
	if !KnownTypes[ev.Type] && !ev.Ignorable {
		return &UnsupportedTypeError{Seq: wantSeq, Type: ev.Type}
	}
	if ev.Time < 0 {
		return &FormatError{Seq: wantSeq, Type: ev.Type, Message: "has a negative time"}
	}
	// The payload's JSON validity is checked where raw bytes enter (AppendRaw,
	// ValidateLog); events decoded by encoding/json or built by Append are
	// valid already, and rescanning every payload would dominate cold reads.
	if len(ev.Data) == 0 {
		return &FormatError{Seq: wantSeq, Type: ev.Type, Message: "has no data"}
	}
	if SurfaceTypes[ev.Type] {
		if ev.SurfaceOp == nil {
			return &FormatError{Seq: wantSeq, Type: ev.Type, Message: "is a surface event without surfaceOp"}
		}
		if ev.SurfaceOp.Replace && ev.SurfaceOp.End >= wantSeq {
			return &FormatError{Seq: wantSeq, Type: ev.Type, Message: "replaces a range that does not precede it"}
		}
	} else if KnownTypes[ev.Type] && (ev.SurfaceOp != nil || ev.SourceEventSeqs != nil) {
		return &FormatError{Seq: wantSeq, Type: ev.Type, Message: "is a log-only event carrying surfaceOp or sourceEventSeqs"}
	}
	for _, s := range ev.SourceEventSeqs {
		if s < 0 || s >= wantSeq {
			return &FormatError{Seq: wantSeq, Type: ev.Type, Message: "sourceEventSeqs must name earlier events"}
		}
	}
	return nil
}

// ValidateLog checks a whole log built from untrusted parts (a seed): every
// event valid, its payload valid JSON, and seqs contiguous from 0.
func ValidateLog(events []Event) error {
	for i, ev := range events {
		if err := ValidateEvent(ev, int64(i)); err != nil {
			return err
		}
		if !json.Valid(ev.Data) {
			return &FormatError{Seq: int64(i), Type: ev.Type, Message: "has no valid JSON data"}
		}
	}
	return nil
}

// DecodeData decodes an event payload into T.
func DecodeData[T any](ev Event) (T, error) {
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		return v, &FormatError{Seq: ev.Seq, Type: ev.Type, Message: "malformed data: " + err.Error()}
	}
	return v, nil
}

// MustData marshals a payload that is known to be serializable (our own
// payload structs). It panics only on a programming error.
func MustData(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("session: payload %T is not serializable: %v", v, err))
	}
	return b
}
