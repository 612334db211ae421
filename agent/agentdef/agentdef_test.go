package agentdef

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fixtureOptions(t *testing.T) Options {
	t.Helper()
	root, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Cwd:        filepath.Join(root, "project", "sub"),
		GitRoot:    filepath.Join(root, "project"),
		ConfigHome: filepath.Join(root, "user", "config"),
		Home:       filepath.Join(root, "user", "home"),
	}
}

// rel shortens fixture paths for comparison.
func rel(t *testing.T, p string) string {
	t.Helper()
	root, _ := filepath.Abs("testdata")
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

func TestLoadFixturesAllFormats(t *testing.T) {
	s := Load(fixtureOptions(t))
	var got []string
	for _, d := range s.Defs {
		got = append(got, fmt.Sprintf("%s %s/%s %s line=%d tools=%q deny=%q model=%q mode=%s perm=%q turns=%d iso=%s instr=%q",
			d.Name, d.Scope, d.Format, rel(t, d.File), d.Line, d.Tools, d.DisallowedTools, d.Model, d.Mode,
			d.PermissionMode, d.MaxTurns, d.Isolation, d.Instructions))
	}
	want := []string{
		`auditor project/opencode project/.opencode/agents/auditor.md line=1 tools=[] deny=["write" "edit" "bash"] model="anthropic/claude-sonnet-4-5" mode=background perm="" turns=5 iso=none instr="Review the current changes. List findings with file and line."`,
		`debugger user/cursor user/home/.cursor/agents/debugger.md line=2 tools=[] deny=[] model="anthropic/claude-opus-4-5" mode=foreground perm="" turns=0 iso=none instr="Debug."`,
		`docs-writer project/copilot project/.github/agents/docs-writer.agent.md line=1 tools=["read" "write" "edit" "grep" "glob"] deny=[] model="" mode=background perm="" turns=0 iso=none instr="# Docs writer\n\nKeep the docs in step with the code."`,
		`explorer project/codex project/.codex/agents/explorer.toml line=1 tools=[] deny=[] model="openai/gpt-5-codex" mode=background perm="plan" turns=0 iso=none instr="Explore the repository and report its structure."`,
		`helper project/acp-agent project/sub/.acp-agent/agents/helper.md line=1 tools=[] deny=[] model="" mode=background perm="" turns=0 iso=none instr="Sub."`,
		`migrator user/opencode user/config/opencode/agents/migrator.md line=1 tools=[] deny=["bash" "todo"] model="openai/gpt-5" mode=background perm="" turns=0 iso=none instr="Migrate."`,
		`planner user/codex user/home/.codex/agents/planner.toml line=1 tools=[] deny=[] model="" mode=background perm="bypass" turns=0 iso=none instr="Make a plan."`,
		`reviewer project/acp-agent project/.acp-agent/agents/reviewer.md line=2 tools=["read" "grep" "glob"] deny=["bash"] model="script/smart" mode=foreground perm="plan" turns=8 iso=none instr="You are a careful code reviewer. Read the change, then list concrete\nproblems with file and line. Do not edit files."`,
		`security project/gemini project/.gemini/agents/security.md line=2 tools=["read" "grep" "bash"] deny=[] model="" mode=background perm="" turns=12 iso=none instr="Look for injection, unsafe deserialization and committed secrets."`,
		`summarizer user/gemini user/home/.gemini/agents/summarizer.md line=2 tools=[] deny=[] model="" mode=background perm="" turns=0 iso=none instr="Summarize."`,
		`tester project/claude project/.claude/agents/tester.md line=2 tools=["read" "grep" "glob" "mcp__ci__logs"] deny=["bash" "write"] model="anthropic/claude-sonnet-4-5" mode=background perm="accept-edits" turns=20 iso=worktree instr="Run the test suite and explain each failure."`,
		`triage user/copilot user/home/.copilot/agents/triage.agent.md line=2 tools=["read" "bash" "todo"] deny=[] model="" mode=background perm="" turns=0 iso=none instr="Triage."`,
		`verifier project/cursor project/.cursor/agents/verifier.md line=2 tools=[] deny=[] model="" mode=background perm="plan" turns=0 iso=none instr="Verify each claim by running the checks yourself."`,
		`writer user/acp-agent user/config/acp-agent/agents/writer.md line=1 tools=["read" "write" "edit"] deny=[] model="" mode=background perm="" turns=0 iso=none instr="Write clear documentation."`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("definitions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	fx := func(rel string) string {
		root, _ := filepath.Abs("testdata")
		return filepath.Join(root, rel)
	}
	var probs []string
	for _, p := range s.Problems {
		probs = append(probs, fmt.Sprintf("%s:%d skipped=%v %s", rel(t, p.File), p.Line, p.Skipped, p.Message))
	}
	wantProbs := []string{
		`project/.claude/agents/tester.md:4 skipped=false tool "Bash(go test *)": argument patterns (go test *) are not supported in agent tool lists: bash left out (put the pattern in the settings' permission rules)`,
		`project/.claude/agents/tester.md:4 skipped=false tool "WebFetch" has no counterpart here: left out`,
		`project/.claude/agents/tester.md:5 skipped=false tool "Bash(rm *)": argument patterns are not supported in agent tool lists: all of bash is denied`,
		`project/.claude/agents/tester.md:10 skipped=false key "color" is not mapped: ignored`,
		`project/.codex/agents/explorer.toml:9 skipped=false key "nickname" is not mapped: ignored`,
		`project/.codex/agents/explorer.toml:7 skipped=false model_reasoning_effort is not mapped: the child uses its model's default`,
		`project/.codex/agents/explorer.toml:11 skipped=false mcp_servers is not mapped: a child uses its session's MCP servers`,
		`project/.gemini/agents/remote.md:2 skipped=true kind "remote" is an agent reached over the network (A2A), which this agent does not run`,
		`project/.gemini/agents/security.md:5 skipped=false tool "google_web_search" has no counterpart here: left out`,
		`project/.gemini/agents/security.md:10 skipped=false model "gemini-2.5-pro" is not mapped: the child inherits the parent's model (this agent has no provider for it)`,
		`project/.gemini/agents/security.md:11 skipped=false key "temperature" is not mapped: ignored`,
		`project/.gemini/agents/security.md:13 skipped=false key "timeout_mins" is not mapped: ignored`,
		`project/.cursor/agents/verifier.md:4 skipped=false model "fast" is not mapped: the child inherits the parent's model`,
		`project/.github/agents/docs-writer.agent.md:2 skipped=false name "Docs Writer" is a display name, not an agent name: the file name "docs-writer" is used`,
		`project/.github/agents/docs-writer.agent.md:4 skipped=false tool "web" has no counterpart here: left out`,
		`project/.github/agents/docs-writer.agent.md:4 skipped=false tool "github/*" has no counterpart here: left out`,
		`project/.github/agents/docs-writer.agent.md:5 skipped=false model "Claude Sonnet 4.5" is not mapped (Copilot names models by display name): the child inherits the parent's model`,
		`project/.github/agents/docs-writer.agent.md:6 skipped=false key "target" is not mapped: ignored`,
		`project/.opencode/agents/auditor.md:4 skipped=false model variant "high" is not mapped: anthropic/claude-sonnet-4-5 is used`,
		`project/.opencode/agents/auditor.md:9 skipped=false permission deny shell "git push *": patterns are not supported in agent tool lists: all of bash is denied`,
		`project/.opencode/agents/auditor.md:12 skipped=false permission allow read "*" is not mapped: the session's settings and gate decide`,
		`project/.opencode/agents/auditor.md:16 skipped=false key "color" is not mapped: ignored`,
		`project/.opencode/agents/lead.md:3 skipped=true mode "primary" is an agent for the person to switch to, not a subagent`,
		`user/config/opencode/agents/migrator.md:6 skipped=false permission ask edit "*" is not mapped: the session's settings and gate decide`,
		`user/config/opencode/agents/migrator.md:8 skipped=false permission allow bash "git *" is not mapped: the session's settings and gate decide`,
		`user/config/opencode/agents/migrator.md:9 skipped=false permission deny bash "rm *": patterns are not supported in agent tool lists: all of bash is denied`,
		`user/config/opencode/agents/migrator.md:11 skipped=false tool "webfetch" has no counterpart here: ignored`,
		`project/.acp-agent/agents/helper.md:1 skipped=true agent "helper" is shadowed by ` + fx("project/sub/.acp-agent/agents/helper.md") + ` (the directory nearest the working directory wins)`,
		`user/home/.copilot/agents/planner.agent.md:1 skipped=true agent "planner" is shadowed by ` + fx("user/home/.codex/agents/planner.toml") + ` (Codex's format ranks before Copilot's; the order is ours, Claude Code, Codex, Gemini CLI, Cursor, Copilot, opencode)`,
		`project/.claude/agents/reviewer.md:2 skipped=true agent "reviewer" is shadowed by ` + fx("project/.acp-agent/agents/reviewer.md") + ` (our format ranks before Claude Code's; the order is ours, Claude Code, Codex, Gemini CLI, Cursor, Copilot, opencode)`,
		`user/config/acp-agent/agents/reviewer.md:1 skipped=true agent "reviewer" is shadowed by ` + fx("project/.acp-agent/agents/reviewer.md") + ` (a project definition wins over a user one)`,
		`project/.cursor/agents/tester.md:2 skipped=true agent "tester" is shadowed by ` + fx("project/.claude/agents/tester.md") + ` (Claude Code's format ranks before Cursor's; the order is ours, Claude Code, Codex, Gemini CLI, Cursor, Copilot, opencode)`,
		`user/home/.claude/agents/writer.md:2 skipped=true agent "writer" is shadowed by ` + fx("user/config/acp-agent/agents/writer.md") + ` (our format ranks before Claude Code's; the order is ours, Claude Code, Codex, Gemini CLI, Cursor, Copilot, opencode)`,
	}
	if !slices.Equal(probs, wantProbs) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(probs, "\n"), strings.Join(wantProbs, "\n"))
	}
	if d, ok := s.Get("reviewer"); !ok || !strings.HasPrefix(d.Hash, "sha256:") || len(d.Hash) != len("sha256:")+64 {
		t.Errorf("Get(reviewer) = %+v, %v", d, ok)
	}
	if _, ok := s.Get("nobody"); ok {
		t.Error("Get(nobody) found something")
	}
}

func TestMalformedFilesAreReportedWithLine(t *testing.T) {
	tests := []struct {
		file string
		line int
		want string
	}{
		{"no-frontmatter.md", 1, `no frontmatter: the file must start with a line "---"`},
		{"unclosed.md", 1, `the frontmatter is not closed`},
		{"bad-yaml.md", 3, "frontmatter is not valid YAML: mapping values are not allowed in this context"},
		{"no-description.md", 2, "description is missing or empty"},
		{"bad-maxturns.md", 3, "maxTurns must be a positive whole number"},
		{"bad-mode.md", 3, `mode must be "background" or "foreground", not "sideways"`},
		{"unknown-key.md", 3, `unknown key "disalowedTools"`},
		{"tool-pattern.md", 3, `argument patterns belong in the settings' permission rules`},
		{"bad-model.md", 3, `model must be "inherit" or PROVIDER/MODEL`},
		{"bad-name.md", 2, `name "has space" must be`},
		{"dup-key.md", 3, `key "description" appears twice (first on line 2)`},
		{"bad-isolation.md", 3, `isolation must be "none" or "worktree"`},
		{"bad-permission.md", 3, `permissionMode must be`},
		{"not-mapping.md", 2, "the frontmatter must be a mapping"},
		{"bad-type.toml", 2, "not valid TOML"},
		{"bad-toml.toml", 1, "not valid TOML"},
		{"no-description.toml", 1, "description is missing or empty"},
		{"bad-skills.md", 3, `skills: name "not ok" must be`},
		{"gemini-bad-kind.md", 3, `kind must be "local" or "remote", not "teleported"`},
		{"gemini-bad-maxturns.md", 4, "max_turns must be a positive whole number"},
		{"gemini-bad-name.md", 2, `name "Has Space" must be`},
		{"cursor-bad-readonly.md", 4, "readonly must be true or false"},
		{"cursor-bad-background.md", 3, "is_background must be true or false"},
		{"cursor-no-description.md", 2, "description is missing or empty"},
		{"copilot-bad-tools.agent.md", 3, "tools must be a list of tool names"},
		{"copilot-disabled.agent.md", 4, "disable-model-invocation is true"},
		{"opencode-bad-mode.md", 3, `mode must be "subagent", "all" or "primary", not "sideways"`},
		{"opencode-bad-permissions.md", 3, "permissions must be a list"},
		{"opencode-permission-no-effect.md", 3, "each entry needs an action and an effect"},
		{"opencode-bad-tools.md", 3, "tools: bash must be true or false"},
		{"opencode-disabled.md", 4, "disable is true"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "malformed", tt.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f := FormatOurs
			switch prefix, _, _ := strings.Cut(tt.file, "-"); {
			case strings.HasSuffix(tt.file, ".toml"):
				f = FormatCodex
			case prefix == "gemini", prefix == "cursor", prefix == "copilot", prefix == "opencode":
				f = Format(prefix)
			}
			def, probs := Parse(path, f, data)
			if def != nil {
				t.Fatalf("parsed %+v; want it skipped", def)
			}
			if len(probs) != 1 {
				t.Fatalf("problems = %v; want one", probs)
			}
			p := probs[0]
			if p.File != path || p.Line != tt.line || !p.Skipped || !strings.Contains(p.Message, tt.want) {
				t.Errorf("problem = %s (skipped %v); want %s:%d containing %q", p, p.Skipped, path, tt.line, tt.want)
			}
		})
	}
}

// A malformed file is skipped, never fatal: the others still load.
func TestLoadSkipsMalformedAndKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	agents := filepath.Join(dir, ".acp-agent", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(agents, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.md", "---\ndescription: fine\n---\nbody\n")
	write("bad.md", "---\ndescription: fine\nmaxTurns: -1\n---\n")
	write("same.md", "---\nname: good\ndescription: a duplicate\n---\n")
	if err := os.Mkdir(filepath.Join(agents, "dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Load(Options{Cwd: dir})
	if got := s.Names(); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("names = %v", got)
	}
	if d, _ := s.Get("good"); d.Description != "fine" {
		t.Errorf("good = %q; want the file named good.md (first by path)", d.Description)
	}
	var msgs []string
	for _, p := range s.Problems {
		msgs = append(msgs, p.String())
	}
	want := []string{
		filepath.Join(agents, "bad.md") + ":3: maxTurns must be a positive whole number",
		filepath.Join(agents, "same.md") + `:2: duplicate agent "good": also defined in ` + filepath.Join(agents, "good.md") + ", which is used",
	}
	if !slices.Equal(msgs, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

func TestSplitFrontmatter(t *testing.T) {
	tests := []struct {
		in       string
		yaml     string
		body     string
		bodyLine int
		err      bool
	}{
		{"---\na: 1\n---\nbody\n", "a: 1\n", "body\n", 4, false},
		{"\xef\xbb\xbf---\r\na: 1\r\n---\r\nbody", "a: 1\r\n", "body", 4, false},
		{"---\n---\n", "", "", 3, false},
		{"---\na: 1\n---", "a: 1\n", "", 4, false},
		{"---", "", "", 0, true},
		{"", "", "", 0, true},
		{"a: 1\n---\n", "", "", 0, true},
		{"---\na: 1\n", "", "", 0, true},
	}
	for _, tt := range tests {
		fm, err := SplitFrontmatter([]byte(tt.in))
		if (err != nil) != tt.err {
			t.Errorf("%q: err = %v", tt.in, err)
			continue
		}
		if err == nil && (string(fm.YAML) != tt.yaml || string(fm.Body) != tt.body || fm.BodyLine != tt.bodyLine || fm.Line != 2) {
			t.Errorf("%q: got yaml %q body %q bodyLine %d", tt.in, fm.YAML, fm.Body, fm.BodyLine)
		}
	}
}
