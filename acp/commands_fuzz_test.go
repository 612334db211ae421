package acp

import (
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// FuzzSlashCommand: any prompt text is either not a command or a command
// whose name is a plain word taken from the text's start.
func FuzzSlashCommand(f *testing.F) {
	for _, s := range []string{"/agents", " /agents  x y", "/home/me/x", "/", "//", "/a\tb", "/x\ny", "hello /agents", "/ä"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		name, input, ok := slashCommand([]acpsdk.ContentBlock{acpsdk.TextBlock(text)})
		if !ok {
			return
		}
		if name == "" || strings.ContainsAny(name, "/ \t\n") {
			t.Fatalf("bad name %q from %q", name, text)
		}
		if !strings.HasPrefix(strings.TrimSpace(text), "/"+name) {
			t.Fatalf("name %q does not start %q", name, text)
		}
		if input != strings.TrimSpace(input) {
			t.Fatalf("input %q not trimmed", input)
		}
	})
}
