package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Style is how each kind of event reads; see Inspect and Compact.
type Style struct{ f formatter }

// Inspect is the "sessions show" style.
var Inspect = Style{inspect{}}

// Compact is the scenario transcript style.
var Compact = Style{compact{}}

// formatter writes one decoded event. A style that does not show a kind
// of event writes nothing for it.
type formatter interface {
	turnStart(b *bytes.Buffer, d session.TurnData)
	turnEnd(b *bytes.Buffer, d session.TurnEndData)
	descriptor(b *bytes.Buffer, raw json.RawMessage)
	title(b *bytes.Buffer, d session.TitleData)
	spliced(b *bytes.Buffer, d session.InboxSplicedData)
	user(b *bytes.Buffer, m session.Message)
	assistant(b *bytes.Buffer, d session.AssistantMessageData)
	toolCall(b *bytes.Buffer, d session.ToolCallData)
	toolResult(b *bytes.Buffer, d session.ToolResultData)
	compaction(b *bytes.Buffer, d session.CompactionData)
	notice(b *bytes.Buffer, d session.NoticeData)
	window(b *bytes.Buffer, d session.ContextWindowData)
}

// Write renders events to w in style s. Events whose payload does not
// decode are skipped (a transcript is for reading, not for validating).
func Write(w io.Writer, events []session.Event, s Style) error {
	var b bytes.Buffer
	for _, ev := range events {
		writeEvent(&b, ev, s.f)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeEvent(b *bytes.Buffer, ev session.Event, f formatter) {
	if show, ok := byType[ev.Type]; ok {
		show(b, ev, f)
	}
}

// byType routes each shown event type to its formatter method, with the
// payload decoded.
var byType = map[string]func(*bytes.Buffer, session.Event, formatter){
	session.TypeTurnStart:        decoded(formatter.turnStart),
	session.TypeTurnEnd:          decoded(formatter.turnEnd),
	session.TypeDescriptor:       func(b *bytes.Buffer, ev session.Event, f formatter) { f.descriptor(b, ev.Data) },
	session.TypeSessionTitle:     decoded(formatter.title),
	session.TypeInboxSpliced:     decoded(formatter.spliced),
	session.TypeUserMessage:      decoded(formatter.user),
	session.TypeAssistantMessage: decoded(formatter.assistant),
	session.TypeToolCall:         decoded(formatter.toolCall),
	session.TypeToolResult:       decoded(formatter.toolResult),
	session.TypeCompaction:       decoded(formatter.compaction),
	session.TypeNotice:           decoded(formatter.notice),
	session.TypeContextWindow:    decoded(formatter.window),
}

// decoded adapts a formatter method to an event: it is called with the
// event's payload when that decodes as T, and not at all otherwise.
func decoded[T any](show func(formatter, *bytes.Buffer, T)) func(*bytes.Buffer, session.Event, formatter) {
	return func(b *bytes.Buffer, ev session.Event, f formatter) {
		if d, err := session.DecodeData[T](ev); err == nil {
			show(f, b, d)
		}
	}
}

// WriteIndented writes text line by line, each prefixed with pad and
// without trailing spaces.
func WriteIndented(b *bytes.Buffer, pad, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(strings.TrimRight(pad+l, " ") + "\n")
	}
}

// DescribeCompaction reads a compaction record on one line: trigger,
// outcome, what it did and the token estimates.
func DescribeCompaction(d session.CompactionData) string {
	what := "summary up to seq " + fmt.Sprint(d.UpTo)
	if d.Summary == "" {
		what = "tool results stubbed up to seq " + fmt.Sprint(d.StubUpTo)
	}
	if d.Outcome != session.CompactionCompleted {
		what = d.Error
	}
	return fmt.Sprintf("compaction (%s) %s: %s; ~%d -> ~%d tokens", d.Trigger, d.Outcome, what, d.PreTokens, d.PostTokens)
}

// DescribeWindow reads a learned context window on one line.
func DescribeWindow(d session.ContextWindowData) string {
	s := fmt.Sprintf("context window learned from the provider: %d tokens", d.Window)
	if d.Provider != "" || d.Model != "" {
		s += " (" + d.Provider + "/" + d.Model + ")"
	}
	return s
}

// DescribeEnd reads a turn's end reason: its kind, the nested reason and
// detail in parentheses, and the error message.
func DescribeEnd(r session.TurnEndReason) string {
	s := r.Kind
	if r.Reason != nil {
		s += " (" + r.Reason.Kind
		if r.Reason.Detail != "" {
			s += ": " + r.Reason.Detail
		}
		s += ")"
	}
	if r.Error != nil {
		s += ": " + r.Error.Message
	}
	return s
}

// ResultText flattens the text of a tool-result message.
func ResultText(m session.Message) string {
	var parts []string
	for _, blk := range m.Content {
		if blk.Type == session.BlockToolResult {
			parts = append(parts, session.JoinText(blk.Content, "\n"))
		} else if blk.Type == session.BlockText {
			parts = append(parts, blk.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// OneLine collapses whitespace and cuts s to max runes (with "…").
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// Canonical renders v as compact JSON with object keys sorted and no HTML
// escaping.
func Canonical(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(fmt.Sprintf(`{"unencodable":%q}`, err.Error()))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// CanonicalJSON re-encodes a JSON document canonically (numbers kept as
// written).
func CanonicalJSON(raw []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return Canonical(v), nil
}

// CompactJSON is CanonicalJSON, or raw itself when it is not JSON.
func CompactJSON(raw []byte) string {
	if c, err := CanonicalJSON(raw); err == nil {
		return string(c)
	}
	return string(raw)
}
