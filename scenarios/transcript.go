package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/transcript"
)

// subagentsListMethod is the extension method the list_agents_via_ext
// step calls. The scenario client spells the wire contract itself rather
// than importing the server's acp.SubagentsListMethod, so a rename on the
// server side fails the scenarios instead of following silently.
const subagentsListMethod = "_acp-agent/subagents/list"

// renderTranscript writes the human-readable account of a run: the client
// steps with their outcomes, every session's conversation turn by turn,
// the subagent tree, and every list_agents output.
// It is long because it writes the transcript's sections in order, into
// one buffer; the order of the lines is the golden format.
func renderTranscript(sc *Scenario, results []stepResult, sessions []storedSession, names map[string]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Scenario %s\n", sc.Name)
	if d := strings.TrimSpace(sc.Description); d != "" {
		transcript.WriteIndented(&b, "  ", d)
	}
	label := func(id string) string {
		if n, ok := names[id]; ok {
			return fmt.Sprintf("%s (%s)", id, n)
		}
		return id
	}

	b.WriteString("\nClient steps\n")
	for _, res := range results {
		st := res.Step
		line := fmt.Sprintf("  %2d. %s", st.Index, st.Op)
		if res.Session != "" && st.Op != OpNewSession {
			line += " " + label(res.Session)
		}
		switch st.Op {
		case OpPrompt:
			line += fmt.Sprintf(": %q", st.Text)
		}
		if res.Detail != "" {
			line += ": " + res.Detail
		}
		if len(res.Stops) > 0 {
			line += " -> stop reason " + strings.Join(res.Stops, ", ")
		}
		b.WriteString(line + "\n")
		if res.Output != "" {
			transcript.WriteIndented(&b, "        ", res.Output)
		}
	}

	byID := map[string]*storedSession{}
	for i := range sessions {
		byID[sessions[i].Header.ID] = &sessions[i]
	}
	for _, s := range sessions {
		b.WriteString("\n")
		writeSession(&b, s, label)
	}

	b.WriteString("\nSubagent tree\n")
	for _, s := range sessions {
		pad := strings.Repeat("   ", s.Depth)
		mark := ""
		if s.Depth > 0 {
			mark = "└─ "
		}
		b.WriteString("  " + pad + mark + label(s.Header.ID) + describeNode(s) + "\n")
	}

	b.WriteString("\nlist_agents\n")
	found := false
	for _, s := range sessions {
		calls := map[string]session.ToolCallData{}
		for _, ev := range s.Events {
			switch ev.Type {
			case session.TypeToolCall:
				if d, err := session.DecodeData[session.ToolCallData](ev); err == nil && d.Name == delegation.ToolListAgents {
					calls[d.CallID] = d
				}
			case session.TypeToolResult:
				d, err := session.DecodeData[session.ToolResultData](ev)
				if err != nil {
					continue
				}
				call, ok := calls[d.Message.Source.CallID]
				if !ok {
					continue
				}
				found = true
				fmt.Fprintf(&b, "  %s, turn %d, call %s, arguments %s:\n", label(s.Header.ID), call.Turn, call.CallID, call.Arguments)
				transcript.WriteIndented(&b, "    ", transcript.ResultText(d.Message))
			}
		}
	}
	for _, res := range results {
		if res.Step.Op == OpListAgentsEx {
			found = true
			fmt.Fprintf(&b, "  %s for %s, scope %s (step %d):\n", subagentsListMethod, label(res.Session), res.Step.Scope, res.Step.Index)
			transcript.WriteIndented(&b, "    ", res.Output)
		}
	}
	if !found {
		b.WriteString("  (not called)\n")
	}
	return b.Bytes()
}

// describeNode summarises a session for the tree: its delegation identity
// and how its last turn ended.
func describeNode(s storedSession) string {
	var parts []string
	if s.Header.Origin == session.OriginSubagent {
		if d, ok := lastDescriptor(s); ok {
			parts = append(parts, fmt.Sprintf("%s via %s %q", d.Mode, d.Provider, d.Label))
		} else {
			parts = append(parts, "no descriptor")
		}
	}
	turns, last := 0, ""
	for _, ev := range s.Events {
		if ev.Seq >= int64(s.Header.SeedLength) && ev.Type == session.TypeTurnEnd {
			turns++
			if d, err := session.DecodeData[session.TurnEndData](ev); err == nil {
				last = transcript.DescribeEnd(d.Reason)
			}
		}
	}
	if session.OpenTurn(s.Events) {
		last = "open turn"
	}
	parts = append(parts, fmt.Sprintf("%d turn(s) of its own", turns))
	if last != "" {
		parts = append(parts, "last: "+last)
	}
	return " — " + strings.Join(parts, ", ")
}

type descriptorView struct {
	Mode     string `json:"mode"`
	Provider string `json:"provider"`
	Label    string `json:"label"`
}

// lastDescriptor returns the last descriptor of the session's own suffix
// (after any inherited fork prefix).
func lastDescriptor(s storedSession) (descriptorView, bool) {
	var d descriptorView
	ok := false
	for _, ev := range s.Events {
		if ev.Seq < int64(s.Header.SeedLength) || ev.Type != session.TypeDescriptor {
			continue
		}
		if v, err := session.DecodeData[descriptorView](ev); err == nil {
			d, ok = v, true
		}
	}
	return d, ok
}

func writeSession(b *bytes.Buffer, s storedSession, label func(string) string) {
	h := s.Header
	fmt.Fprintf(b, "Session %s", label(h.ID))
	if h.ParentSession != "" {
		fmt.Fprintf(b, ", child of %s, depth %d", label(h.ParentSession), h.DelegationDepth)
	}
	b.WriteString("\n")
	if h.SeedLength > 0 {
		fmt.Fprintf(b, "  inherits %d events of its parent's completed turns\n", h.SeedLength)
	}
	own := make([]session.Event, 0, len(s.Events))
	for _, ev := range s.Events {
		if ev.Seq >= int64(h.SeedLength) {
			own = append(own, ev)
		}
	}
	transcript.Write(b, own, transcript.Compact) // a bytes.Buffer does not fail
}

// renderExtList renders the answer of _acp-agent/subagents/list: one
// canonical JSON object per row when the answer holds a list of rows,
// else the whole answer.
func renderExtList(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err == nil {
		for _, key := range sortedKeys(obj) {
			var rows []json.RawMessage
			if json.Unmarshal(obj[key], &rows) == nil && rows != nil {
				if len(rows) == 0 {
					return key + ": (none)"
				}
				var lines []string
				for _, row := range rows {
					lines = append(lines, transcript.CompactJSON(row))
				}
				return key + ":\n" + strings.Join(lines, "\n")
			}
		}
	}
	var rows []json.RawMessage
	if json.Unmarshal(raw, &rows) == nil && rows != nil {
		var lines []string
		for _, row := range rows {
			lines = append(lines, transcript.CompactJSON(row))
		}
		if len(lines) == 0 {
			return "(none)"
		}
		return strings.Join(lines, "\n")
	}
	return transcript.CompactJSON(raw)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	return slices.Sorted(maps.Keys(m))
}
