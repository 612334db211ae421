package compact

// This file shrinks a request whose newest turn alone does not fit: the
// middle of each oversized text (a tool result, pasted prompt text, an
// embedded resource) is cut from the model's view with a marked note of
// what was cut. The log keeps the full text; only the request changes.

import (
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// MinElide is the smallest text, in estimated tokens, Fit cuts a block
// down to.
const MinElide = 256

// ElidedNote is the marker standing where the middle of a text was cut;
// its %d are the bytes and estimated tokens removed.
const ElidedNote = "\n\n[… %d bytes (about %d tokens) cut from the middle of this text so the conversation fits the model's context window; the full text is in the session log …]\n\n"

// Elide returns msgs with every text of a user or tool message longer
// than limit estimated tokens cut to its head and tail around ElidedNote,
// and how many texts were cut. Messages it changes are copied; msgs is not
// written through. Assistant messages are left as they are.
func Elide(msgs []model.Message, limit int) ([]model.Message, int) {
	if limit <= 0 {
		return msgs, 0
	}
	out := make([]model.Message, len(msgs))
	n := 0
	for i, m := range msgs {
		out[i] = m
		if m.Role == session.RoleAssistant {
			continue
		}
		if bs, k := elideBlocks(m.Content, limit); k > 0 {
			out[i].Content, n = bs, n+k
		}
	}
	return out, n
}

func elideBlocks(bs []session.Block, limit int) ([]session.Block, int) {
	var out []session.Block
	n := 0
	for i, b := range bs {
		changed := false
		if budget.EstimateText(b.Text) > limit {
			b.Text, changed = elideText(b.Text, limit), true
		}
		if len(b.Content) > 0 {
			if inner, k := elideBlocks(b.Content, limit); k > 0 {
				b.Content, changed, n = inner, true, n+k-1
			}
		}
		if !changed {
			continue
		}
		if out == nil {
			out = append([]session.Block(nil), bs...)
		}
		out[i] = b
		n++
	}
	return out, n
}

// elideText keeps about limit tokens of s, half from its start and half
// from its end, cut at rune boundaries.
func elideText(s string, limit int) string {
	keep := limit * 3 / 2 // bytes on each side (EstimateText: 3 bytes a token)
	head, tail := keep, len(s)-keep
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	cut := tail - head
	return s[:head] + fmt.Sprintf(ElidedNote, cut, budget.EstimateText(s[head:tail])) + s[tail:]
}

// Fit returns req with its oversized texts elided (the largest cut that
// still keeps each text as long as possible) so that its estimate is at
// most limit tokens, and the per-text limit it used. ok is false when
// even texts of MinElide tokens do not fit.
func Fit(req model.Request, limit int) (fitted model.Request, perText int, ok bool) {
	if budget.EstimateRequest(req) <= limit {
		return req, 0, true
	}
	for per := max(limit/2, MinElide); per >= MinElide; per /= 2 {
		msgs, n := Elide(req.Messages, per)
		if n == 0 {
			continue
		}
		r := req
		r.Messages = msgs
		if budget.EstimateRequest(r) <= limit {
			return r, per, true
		}
	}
	return req, 0, false
}

// windowInError finds the window a provider's context-length refusal
// states: "maximum context length is 65536 tokens", "... > 200000
// maximum", "context window of 128000 tokens".
var windowInError = regexp.MustCompile(`(?i)(?:maximum context length is|context window (?:is|of)|context length of)\s*([0-9][0-9,]*)|>\s*([0-9][0-9,]*)\s*maximum`)

// WindowFromError returns the context window stated in err's text, or 0.
func WindowFromError(err error) int {
	if err == nil {
		return 0
	}
	m := windowInError.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	s := m[1]
	if s == "" {
		s = m[2]
	}
	var digits []byte
	for i := 0; i < len(s); i++ {
		if s[i] != ',' {
			digits = append(digits, s[i])
		}
	}
	n, err := strconv.Atoi(string(digits))
	if err != nil {
		return 0
	}
	return n
}
