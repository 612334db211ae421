package settings_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
)

// BenchmarkDecide: one gate decision against 30 rules of each list (the
// gate runs it for every call with effects and every read).
func BenchmarkDecide(b *testing.B) {
	dir := b.TempDir()
	var allow, ask, deny []string
	for i := range 30 {
		allow = append(allow, fmt.Sprintf(`"bash(tool%d *)"`, i), fmt.Sprintf(`"edit(src/pkg%d/**)"`, i))
		ask = append(ask, fmt.Sprintf(`"bash(git push%d *)"`, i))
		deny = append(deny, fmt.Sprintf(`"read(secret%d/**)"`, i))
	}
	user := filepath.Join(dir, "settings.json")
	content := fmt.Sprintf(`{"permissions": {"allow": [%s], "ask": [%s], "deny": [%s]}}`,
		strings.Join(allow, ","), strings.Join(ask, ","), strings.Join(deny, ","))
	if err := os.WriteFile(user, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
	p := settings.Load(user, dir)
	calls := []settings.Call{
		{Tool: "bash", Kind: "execute", Subject: "tool29 --flag x"},
		{Tool: "write", Kind: "edit", Subject: "src/pkg29/a/b.go"},
		{Tool: "read", Kind: "read", Subject: "docs/readme.md"},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Decide(calls[i%len(calls)])
	}
}
