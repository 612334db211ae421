package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/internal/benchtree"
)

// benchTree builds a tree of dirs×files Go-like files of lines lines.
func benchTree(b *testing.B, dirs, files, lines int) string {
	b.Helper()
	root := b.TempDir()
	body := strings.Repeat("\tx := compute(a, b) // some ordinary source text here\n", lines)
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			content := "package p\n" + body
			if f == 0 {
				content += "// NEEDLE here\n"
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

func benchCall(b *testing.B, reg *tool.Registry, name, args string) {
	b.Helper()
	res := reg.Execute(context.Background(), tool.Invocation{Name: name, Arguments: json.RawMessage(args), Caller: caller("s")})
	if res.IsError {
		b.Fatalf("%s: %v", name, res.Content)
	}
}

// BenchmarkSearch: glob and grep over 100 dirs × 20 files × 200 lines
// (2000 files, ~21 MB).
func BenchmarkSearch(b *testing.B) {
	root := benchTree(b, 100, 20, 200)
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: root, Files: local.Files{}, Permissions: local.AllowAll{}})...)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("glob", func(b *testing.B) {
		for b.Loop() {
			benchCall(b, reg, "glob", `{"pattern":"**/f01*.go"}`)
		}
	})
	b.Run("grep", func(b *testing.B) {
		for b.Loop() {
			benchCall(b, reg, "grep", `{"pattern":"NEEDLE"}`)
		}
	})
}

// BenchmarkGlob500 is the tool alone on the tree of the glob-turn
// benchmarks (acp's BenchmarkGlobTurn500, cmd/acp-agent's
// BenchmarkBinaryGlobTurn500): one glob returning 500 paths.
//
//	go test ./agent/tool/workspace/toolset -run '^$' -bench BenchmarkGlob500 -benchmem -count 3
func BenchmarkGlob500(b *testing.B) {
	root := b.TempDir()
	if _, err := benchtree.Paths(root, 500); err != nil {
		b.Fatal(err)
	}
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: root, Files: local.Files{}, Permissions: local.AllowAll{}})...)
	if err != nil {
		b.Fatal(err)
	}
	args := `{"pattern":"` + benchtree.GlobPattern + `"}`
	for b.Loop() {
		benchCall(b, reg, "glob", args)
	}
}

// BenchmarkReadPage: one 2000-line page near the start and near the end
// of a 1,000,000-line file (~55 MB, over the whole-file cap).
func BenchmarkReadPage(b *testing.B) {
	root := b.TempDir()
	f, err := os.Create(filepath.Join(root, "huge.txt"))
	if err != nil {
		b.Fatal(err)
	}
	line := strings.Repeat("y", 50) + "\n"
	for range 1_000_000 {
		f.WriteString(line)
	}
	f.Close()
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: root, Files: local.Files{}, Permissions: local.AllowAll{}})...)
	if err != nil {
		b.Fatal(err)
	}
	for _, offset := range []int{1, 998_000} {
		b.Run(fmt.Sprintf("offset=%d", offset), func(b *testing.B) {
			for b.Loop() {
				benchCall(b, reg, "read", fmt.Sprintf(`{"path":"huge.txt","offset":%d}`, offset))
			}
		})
	}
}

// BenchmarkBash: the cost of one trivial command through the local
// process-group runner.
func BenchmarkBash(b *testing.B) {
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: b.TempDir(), Commands: local.Commands{}, Permissions: local.AllowAll{}})...)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		benchCall(b, reg, "bash", `{"command":"true"}`)
	}
}
