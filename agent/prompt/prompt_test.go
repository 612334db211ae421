package prompt

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sebdah/goldie/v2"
)

var start = time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)

var tools = []string{"bash", "edit", "glob", "grep", "list_agents", "read", "subagent", "todo", "write", "mcp__demo__echo"}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitInit(t testing.TB, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	cmd := exec.Command("git", "init", "-q", "-b", "main", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
}

// TestAssemble_Golden builds the prompt for fixture workspaces and
// compares it with a golden file (the temp root replaced by $ROOT).
func TestAssemble_Golden(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) (cwd string, userFile string)
		cap   int
		input Input
	}{
		{
			name: "git-nested-agents",
			setup: func(t *testing.T, root string) (string, string) {
				repo := filepath.Join(root, "repo")
				gitInit(t, repo)
				write(t, filepath.Join(repo, "AGENTS.md"), "Run `go test ./...` before you finish.\n")
				write(t, filepath.Join(repo, "svc", "AGENTS.md"), "The svc package talks to the database only through store.go.\n")
				write(t, filepath.Join(repo, "svc", "CLAUDE.md"), "ignored: this level has an AGENTS.md\n")
				write(t, filepath.Join(repo, "svc", "api", "CLAUDE.md"), "Handlers return typed errors.\n")
				write(t, filepath.Join(root, "AGENTS.md"), "outside the repository: never read\n")
				user := filepath.Join(root, "config", "acp-agent", "AGENTS.md")
				write(t, user, "Answer in British English.\n")
				return filepath.Join(repo, "svc", "api"), user
			},
			input: Input{Tools: tools},
		},
		{
			name: "only-claude",
			setup: func(t *testing.T, root string) (string, string) {
				write(t, filepath.Join(root, "proj", "CLAUDE.md"), "This folder holds notes, not code.\n")
				return filepath.Join(root, "proj"), ""
			},
			input: Input{Tools: []string{"read", "write"}},
		},
		{
			name: "outside-git",
			setup: func(t *testing.T, root string) (string, string) {
				return root, filepath.Join(root, "missing", "AGENTS.md")
			},
			input: Input{Tools: tools},
		},
		{
			name: "over-cap",
			setup: func(t *testing.T, root string) (string, string) {
				repo := filepath.Join(root, "repo")
				gitInit(t, repo)
				write(t, filepath.Join(repo, "AGENTS.md"), strings.Repeat("Root rule. ", 40))
				write(t, filepath.Join(repo, "pkg", "AGENTS.md"), "Nearest rule: keep it.\n")
				return filepath.Join(repo, "pkg"), ""
			},
			cap:   120,
			input: Input{Tools: []string{"bash"}},
		},
		{
			name: "child",
			setup: func(t *testing.T, root string) (string, string) {
				write(t, filepath.Join(root, "AGENTS.md"), "Project rule for everyone.\n")
				return root, ""
			},
			input: Input{Tools: []string{"read", "report", "list_agents"}, Child: true, Persona: "You review code for security problems."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if FindGitRoot(root) != "" {
				t.Skip("the temp dir is inside a git repository")
			}
			cwd, user := tt.setup(t, root)
			got := Assemble(t.Context(), Config{
				Cwd: cwd,
				// A minute, not the default 2 s: this test is about rendering, and
				// git status on a loaded machine can take longer than the default.
				Probe:    ProbeOptions{Now: start, Getenv: func(string) string { return "/bin/bash" }, OS: "linux", Arch: "amd64", Timeout: time.Minute},
				UserFile: user,
				Cap:      tt.cap,
				Input:    tt.input,
			})
			got = strings.ReplaceAll(got, root, "$ROOT")
			goldie.New(t, goldie.WithFixtureDir("testdata"), goldie.WithNameSuffix(".golden")).Assert(t, tt.name, []byte(got))
		})
	}
}

// TestLoadInstructions_Cap checks the cap's properties on many sizes: the
// total never exceeds it, the nearest file is cut last, and every cut is
// accounted for in Cut.
func TestLoadInstructions_Cap(t *testing.T) {
	root := t.TempDir()
	sizes := []int{300, 50, 700, 20}
	dir := root
	var cwd string
	for i, n := range sizes {
		write(t, filepath.Join(dir, AgentsFile), strings.Repeat(string(rune('a'+i)), n))
		cwd = dir
		dir = filepath.Join(dir, fmt.Sprint("d", i))
	}
	for _, limit := range []int{1, 20, 69, 70, 500, 1069, 1070, 5000} {
		ins := LoadInstructions(InstructionOptions{Cwd: cwd, GitRoot: root, Cap: limit})
		if len(ins) != len(sizes) {
			t.Fatalf("cap %d: %d files, want %d", limit, len(ins), len(sizes))
		}
		total := 0
		for i, in := range ins {
			total += len(in.Text)
			if len(in.Text)+in.Cut != sizes[i] {
				t.Errorf("cap %d file %d: kept %d + cut %d != size %d", limit, i, len(in.Text), in.Cut, sizes[i])
			}
			if in.Cut > 0 && i > 0 && ins[i-1].Text != "" {
				t.Errorf("cap %d: file %d cut while a farther file kept text", limit, i)
			}
		}
		if total > limit {
			t.Errorf("cap %d: total %d exceeds it", limit, total)
		}
	}
}

// TestBuild_Deterministic: the same input gives the same bytes.
func TestBuild_Deterministic(t *testing.T) {
	in := Input{Env: Env{Cwd: "/w", OS: "linux", Arch: "amd64", Shell: "/bin/sh", Date: "2026-12-03"}, Tools: tools}
	if a, b := Build(in), Build(in); a != b {
		t.Fatal("Build is not deterministic")
	}
}

// BenchmarkAssemble_20AgentsFiles measures the assembly (instructions
// walk, reads, cap, build) for a repository with 20 nested AGENTS.md, with
// and without the git probe.
func BenchmarkAssemble_20AgentsFiles(b *testing.B) {
	root := b.TempDir()
	gitInit(b, root)
	dir := root
	for i := range 20 {
		write(b, filepath.Join(dir, AgentsFile), strings.Repeat(fmt.Sprintf("Rule %d of this level. ", i), 20))
		if i < 19 {
			dir = filepath.Join(dir, fmt.Sprint("level", i))
		}
	}
	for _, git := range []bool{false, true} {
		b.Run(fmt.Sprintf("git=%v", git), func(b *testing.B) {
			for b.Loop() {
				p := Assemble(b.Context(), Config{Cwd: dir, Probe: ProbeOptions{Now: start, NoGit: !git}, Input: Input{Tools: tools}})
				if !strings.Contains(p, "Rule 19") {
					b.Fatal("nearest file missing")
				}
			}
		})
	}
}
