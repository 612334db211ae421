package app

import (
	"context"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/subagent"
)

// The tree shows what the model named its children as it is: control,
// bidi and terminal escape characters made visible, one row per child.
func TestWriteTreeEscapesLabels(t *testing.T) {
	for _, tc := range []struct {
		name, label, want string
	}{
		{"bidi override", "fix \u202egnp.exe", `fix \u{202E}gnp.exe`},
		{"terminal escape", "\x1b[31mred\x1b[0m", `\u{001B}[31mred\u{001B}[0m`},
		{"newline posing as a row", "ok\n└─ fake [continuable, idle]", `ok\n└─ fake [continuable, idle]`},
		{"plain", "Review the parser", "Review the parser"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			entries := []subagent.DescendantEntry{{Depth: 0}}
			entries[0].ID, entries[0].Label = "child-1", tc.label
			queued := []subagent.QueuedStart{{ID: "child-2", Position: 1, Label: tc.label}}
			if err := WriteTree(context.Background(), &b, "root", entries, queued); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if n := strings.Count(out, "\n"); n != 3 {
				t.Fatalf("%d lines, want 3 (root, child, queued):\n%s", n, out)
			}
			if strings.Count(out, tc.want) != 2 {
				t.Fatalf("label not shown as %q in both rows:\n%s", tc.want, out)
			}
		})
	}
}
