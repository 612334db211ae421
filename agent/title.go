package agent

import (
	"strings"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Title limits (reference-scenarios.md §d item 4).
const (
	titleWords    = 5
	titleMaxBytes = 40
)

// FallbackTitle returns the first five words of the text blocks in
// content, dropping trailing words (or, for one long word, bytes at a rune
// boundary) until it fits in 40 bytes.
func FallbackTitle(content []session.Block) string {
	words := strings.Fields(session.JoinText(content, " "))
	if len(words) > titleWords {
		words = words[:titleWords]
	}
	for len(words) > 1 && len(strings.Join(words, " ")) > titleMaxBytes {
		words = words[:len(words)-1]
	}
	title := strings.Join(words, " ")
	for len(title) > titleMaxBytes {
		_, size := utf8.DecodeLastRuneInString(title)
		title = title[:len(title)-size]
	}
	return title
}
