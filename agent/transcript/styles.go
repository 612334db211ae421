package transcript

// This file defines the two styles: how each decoded event reads.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// inspect is the "sessions show" style: a bracketed heading per message,
// its content indented below, blank lines between; turn starts, titles
// and queue changes are not shown, nor turns that completed normally.
type inspect struct{}

func (inspect) turnStart(*bytes.Buffer, session.TurnData) {}
func (inspect) title(*bytes.Buffer, session.TitleData)    {}
func (inspect) compaction(b *bytes.Buffer, d session.CompactionData) {
	fmt.Fprintf(b, "\n[%s]\n", DescribeCompaction(d))
	if d.Summary != "" {
		WriteIndented(b, "  ", d.Summary)
	}
}
func (inspect) spliced(*bytes.Buffer, session.InboxSplicedData) {}
func (inspect) notice(b *bytes.Buffer, d session.NoticeData) {
	fmt.Fprintf(b, "\n[notice] %s\n", d.Message)
}
func (inspect) window(b *bytes.Buffer, d session.ContextWindowData) {
	fmt.Fprintf(b, "\n[%s]\n", DescribeWindow(d))
}
func (inspect) descriptor(b *bytes.Buffer, raw json.RawMessage) {
	fmt.Fprintf(b, "\n[subagent descriptor] %s\n", OneLine(string(raw), 200))
}

func (inspect) turnEnd(b *bytes.Buffer, d session.TurnEndData) {
	if d.Reason.Kind == session.TurnEndCompleted {
		return
	}
	detail := ""
	if d.Reason.Error != nil {
		detail = ": " + d.Reason.Error.Message
	} else if d.Reason.Reason != nil {
		detail = " (" + d.Reason.Reason.Kind + ")"
	}
	fmt.Fprintf(b, "\n[turn %d ended %s%s]\n", d.Turn, d.Reason.Kind, detail)
}

func (inspect) user(b *bytes.Buffer, m session.Message) {
	who := "user"
	if m.Source.Kind != "" && m.Source.Kind != session.SourceUser {
		who = m.Source.Kind
	}
	fmt.Fprintf(b, "\n[%s]\n%s\n", who, indentBlocks(m.Content))
}

func (inspect) assistant(b *bytes.Buffer, d session.AssistantMessageData) {
	for _, blk := range d.Message.Content {
		switch blk.Type {
		case session.BlockReasoning:
			fmt.Fprintf(b, "\n[thinking]\n%s\n", indent(blk.Text))
		case session.BlockText:
			if blk.Text != "" {
				fmt.Fprintf(b, "\n[assistant]\n%s\n", indent(blk.Text))
			}
		}
	}
}

func (inspect) toolCall(b *bytes.Buffer, d session.ToolCallData) {
	fmt.Fprintf(b, "\n[tool call %s] %s %s\n", d.CallID, d.Name, OneLine(marshalledJSON(d.Arguments), 200))
}

func (inspect) toolResult(b *bytes.Buffer, d session.ToolResultData) {
	for _, blk := range d.Message.Content {
		if blk.Type != session.BlockToolResult {
			continue
		}
		status := "ok"
		if blk.IsError {
			status = "failed"
		}
		fmt.Fprintf(b, "[tool result %s: %s]\n%s\n", blk.ToolCallID, status, indentBlocks(blk.Content))
	}
}

// indentBlocks shows text blocks as they are and resources by reference.
func indentBlocks(blocks []session.Block) string {
	var parts []string
	for _, blk := range blocks {
		switch blk.Type {
		case session.BlockText:
			parts = append(parts, blk.Text)
		case session.BlockResourceLink:
			parts = append(parts, fmt.Sprintf("(link %s %s)", blk.Name, blk.URI))
		case session.BlockResource:
			parts = append(parts, fmt.Sprintf("(resource %s, %d bytes)", blk.URI, len(blk.Text)))
		}
	}
	return indent(strings.Join(parts, "\n"))
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// marshalledJSON re-encodes s with encoding/json's defaults, or returns s
// when it is not JSON.
func marshalledJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// compact is the scenario transcript style: one line per event under
// "turn N", with every boundary, title and queue change.
type compact struct{}

// in indents an event below its turn.
const in = "    "

func (compact) turnStart(b *bytes.Buffer, d session.TurnData) {
	fmt.Fprintf(b, "  turn %d\n", d.Turn)
}

func (compact) turnEnd(b *bytes.Buffer, d session.TurnEndData) {
	fmt.Fprintf(b, "%sturn %d ended: %s\n", in, d.Turn, DescribeEnd(d.Reason))
}

func (compact) descriptor(b *bytes.Buffer, raw json.RawMessage) {
	WriteIndented(b, "  ", "descriptor "+CompactJSON(raw))
}

func (compact) compaction(b *bytes.Buffer, d session.CompactionData) {
	fmt.Fprintf(b, "%s%s\n", in, DescribeCompaction(d))
	if d.Summary != "" {
		WriteIndented(b, in+"  | ", d.Summary)
	}
}

func (compact) notice(b *bytes.Buffer, d session.NoticeData) {
	WriteIndented(b, in, "notice ("+d.Kind+"): "+d.Message)
}

func (compact) window(b *bytes.Buffer, d session.ContextWindowData) {
	fmt.Fprintf(b, "%s%s\n", in, DescribeWindow(d))
}

func (compact) title(b *bytes.Buffer, d session.TitleData) {
	fmt.Fprintf(b, "%stitle: %q\n", in, d.Title)
}

func (compact) spliced(b *bytes.Buffer, d session.InboxSplicedData) {
	for _, m := range d.Inserted {
		if m.Source.Kind == session.SourceUser {
			continue // shown when its turn claims it
		}
		WriteIndented(b, in, fmt.Sprintf("queued for %s (%s): %s", d.Target, SourceName(m.Source), firstLine(session.JoinText(m.Content, "\n"))))
	}
	if d.Outcome != "" && d.RemovedCount != nil {
		fmt.Fprintf(b, "%s%d queued item(s) %s\n", in, *d.RemovedCount, d.Outcome)
	}
}

func (compact) user(b *bytes.Buffer, m session.Message) {
	WriteIndented(b, in, SourceName(m.Source)+": "+session.JoinText(m.Content, "\n"))
}

func (compact) assistant(b *bytes.Buffer, d session.AssistantMessageData) {
	for _, blk := range d.Message.Content {
		switch blk.Type {
		case session.BlockText:
			WriteIndented(b, in, "agent: "+blk.Text)
		case session.BlockReasoning:
			WriteIndented(b, in, "thought: "+blk.Text)
		}
	}
	if d.Interrupted {
		b.WriteString(in + "(agent message interrupted)\n")
	}
}

func (compact) toolCall(b *bytes.Buffer, d session.ToolCallData) {
	WriteIndented(b, in, fmt.Sprintf("tool call %s %s %s", d.CallID, d.Name, d.Arguments))
}

func (compact) toolResult(b *bytes.Buffer, d session.ToolResultData) {
	kind := "result"
	for _, blk := range d.Message.Content {
		if blk.IsError {
			kind = "error result"
		}
	}
	WriteIndented(b, in+"  ", fmt.Sprintf("%s of %s: %s", kind, d.Message.Source.CallID, ResultText(d.Message)))
}

// SourceName says who a message came from.
func SourceName(s session.Source) string {
	switch s.Kind {
	case session.SourceUser:
		return "user"
	case session.SourceSubagentSettled:
		return "settlement notice from " + s.SenderSessionID
	case session.SourceCoordinator:
		return "message from " + s.SenderSessionID
	case session.SourceSubagentReport:
		return "report from " + s.SenderSessionID
	case session.SourcePlugin:
		return "context"
	case "":
		return "user"
	}
	return s.Kind
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
