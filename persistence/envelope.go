package persistence

// This file defines the fast event-envelope decoder of the cold read path:
// one pass over a line that validates its JSON and extracts the envelope,
// keeping the payload as raw bytes. It accepts only the canonical shape our
// writer produces; anything else (escaped or unknown keys, duplicates,
// nulls, non-integer numbers, a replace surfaceOp, invalid JSON) goes to
// encoding/json, so the result is always exactly what json.Unmarshal into a
// session.Event yields (FuzzDecodeEnvelope checks this).

import (
	"encoding/binary"
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/session"
)

// maxFastDepth bounds the nesting the fast validator follows; deeper
// payloads go to encoding/json (whose own limit is 10,000).
const maxFastDepth = 512

// decodeEnvelope decodes one JSONL line (without its newline) into an
// event. ev.Data aliases line (capacity clipped), so line must not be
// modified afterwards.
func decodeEnvelope(line []byte) (session.Event, error) {
	if ev, ok := fastEnvelope(line); ok {
		return ev, nil
	}
	var ev session.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return session.Event{}, err
	}
	return ev, nil
}

// envelope key bits, to refuse duplicates (encoding/json is last-wins;
// the fast path leaves such lines to it).
const (
	keyType = 1 << iota
	keySeq
	keyTime
	keyData
	keySources
	keySurface
	keyIgnorable
)

// fastEnvelope is the single-pass decoder; ok is false when the line is
// not in the canonical shape or not valid JSON.
func fastEnvelope(b []byte) (ev session.Event, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ev, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
		return ev, skipSpace(b, i) == len(b)
	}
	seen := 0
	for {
		// Key: a plain ASCII string.
		if i >= len(b) || b[i] != '"' {
			return ev, false
		}
		ks := i + 1
		ke := plainString(b, ks)
		if ke < 0 {
			return ev, false
		}
		i = skipSpace(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return ev, false
		}
		bit, e := envelopeField(b, skipSpace(b, i+1), b[ks:ke], &ev)
		if e < 0 || seen&bit != 0 {
			return ev, false
		}
		seen |= bit
		i = skipSpace(b, e)
		if i >= len(b) {
			return ev, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return ev, skipSpace(b, i+1) == len(b)
		default:
			return ev, false
		}
	}
}

// envelopeField decodes the value at i of the envelope field key into ev
// and returns the key's bit and the index just past the value; next is -1
// when the value (or the key) is not in the canonical shape.
func envelopeField(b []byte, i int, key []byte, ev *session.Event) (bit, next int) {
	switch string(key) {
	case "type":
		bit = keyType
		if i >= len(b) || b[i] != '"' {
			return 0, -1
		}
		e := plainString(b, i+1)
		if e < 0 {
			return 0, -1
		}
		ev.Type = internType(b[i+1 : e])
		i = e + 1
	case "seq", "time":
		bit = keySeq
		if key[0] == 't' {
			bit = keyTime
		}
		n, e, good := plainInt(b, i)
		if !good {
			return 0, -1
		}
		if bit == keySeq {
			ev.Seq = n
		} else {
			ev.Time = n
		}
		i = e
	case "data":
		bit = keyData
		e := skipValue(b, i, 0)
		if e < 0 || b[i] == 'n' { // null takes encoding/json's path
			return 0, -1
		}
		ev.Data = json.RawMessage(b[i:e:e])
		i = e
	case "surfaceOp":
		bit = keySurface
		if len(b)-i < 8 || string(b[i:i+8]) != `"append"` {
			return 0, -1
		}
		ev.SurfaceOp = &session.SurfaceOp{}
		i += 8
	case "ignorable":
		bit = keyIgnorable
		switch {
		case len(b)-i >= 4 && string(b[i:i+4]) == "true":
			ev.Ignorable = true
			i += 4
		case len(b)-i >= 5 && string(b[i:i+5]) == "false":
			i += 5
		default:
			return 0, -1
		}
	case "sourceEventSeqs":
		bit = keySources
		seqs, e, good := plainIntArray(b, i)
		if !good {
			return 0, -1
		}
		ev.SourceEventSeqs = seqs
		i = e
	default:
		return 0, -1
	}
	return bit, i
}

// internedTypes are the event types whose names internType shares.
var internedTypes = [...]string{
	session.TypeTurnStart, session.TypeTurnEnd, session.TypeStepStart, session.TypeStepEnd,
	session.TypeUserMessage, session.TypeAssistantChunk, session.TypeAssistantMessage,
	session.TypeToolCall, session.TypeToolResult,
}

// internType returns the constant string of a known event type, so that
// decoding a log does not allocate one string per event.
func internType(t []byte) string {
	for _, k := range internedTypes {
		if string(t) == k {
			return k
		}
	}
	return string(t)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// plainString returns the index of the closing quote of a string starting
// at i (just after its opening quote) made of printable ASCII without
// escapes, or -1.
func plainString(b []byte, i int) int {
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' {
			return i
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return -1
		}
	}
	return -1
}

// plainInt parses -?(0|[1-9][0-9]*) of at most 18 digits (always an
// int64) at i.
func plainInt(b []byte, i int) (n int64, end int, ok bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, 0, false
	}
	// A fraction or exponent makes it a float, which encoding/json refuses
	// for an int64; leave that error to it.
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// plainIntArray parses [int, int, ...] of plainInts at i.
func plainIntArray(b []byte, i int) (seqs []int64, end int, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, 0, false
	}
	i = skipSpace(b, i+1)
	seqs = []int64{}
	if i < len(b) && b[i] == ']' {
		return seqs, i + 1, true
	}
	for {
		n, e, good := plainInt(b, i)
		if !good {
			return nil, 0, false
		}
		seqs = append(seqs, n)
		i = skipSpace(b, e)
		if i >= len(b) {
			return nil, 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return seqs, i + 1, true
		default:
			return nil, 0, false
		}
	}
}

// strStop marks the bytes that end a run of plain string content: the
// quote, the backslash and the control characters JSON forbids raw.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// skipValue validates the JSON value at i and returns the index just past
// it, or -1 if it is not valid JSON (or nests deeper than maxFastDepth).
// It follows encoding/json's grammar: RFC 8259 numbers, the three
// literals, strings with the standard escapes and no raw control
// characters (other bytes, invalid UTF-8 included, are accepted as
// encoding/json accepts them).
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i+1)
	case c == '{' || c == '[':
		return skipMembers(b, i+1, depth, c == '{')
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return -1
}

// skipMembers validates the members of an object (object) or the
// elements of an array from i, just after the opening byte, and returns
// the index just past the closing byte, or -1.
func skipMembers(b []byte, i, depth int, object bool) int {
	if depth >= maxFastDepth {
		return -1
	}
	end := byte(']')
	if object {
		end = '}'
	}
	i = skipSpace(b, i)
	if i < len(b) && b[i] == end {
		return i + 1
	}
	for {
		if object {
			if i = skipKey(b, i); i < 0 {
				return -1
			}
		}
		if i = skipValue(b, i, depth+1); i < 0 {
			return -1
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		if b[i] == end {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = skipSpace(b, i+1)
	}
}

// skipKey validates an object key and its colon from i and returns the
// index of the value, or -1.
func skipKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = skipString(b, i+1); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// SWAR constants: one in every byte, the high bit of every byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports whether none of the 8 bytes of w is a strStop byte:
// no byte below 0x20, no quote, no backslash.
func plainWord(w uint64) bool {
	less := (w - ones*0x20) &^ w
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return (less|((q-ones)&^q)|((bs-ones)&^bs))&highs == 0
}

// skipString validates string content from i (just after the opening
// quote) and returns the index just past the closing quote, or -1. Plain
// runs are skipped eight bytes at a time: payload text is most of a log.
func skipString(b []byte, i int) int {
	for {
		for i+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a raw control character
			return -1
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(b []byte, i int) bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }

// skipNumber validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func skipNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; isDigit(b, i); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !isDigit(b, i) {
			return -1
		}
		for ; isDigit(b, i); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !isDigit(b, i) {
			return -1
		}
		for ; isDigit(b, i); i++ {
		}
	}
	return i
}
