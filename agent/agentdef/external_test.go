package agentdef

import (
	"strings"
	"testing"
)

func TestExternalDefinitions(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name    string
		format  Format
		text    string
		want    *External
		wantErr string // the skip reason
		note    string // an unmapped-field note
	}{
		{name: "full", format: FormatOurs,
			text: "---\ndescription: codex\ncommand: codex-acp\nargs: [\"-c\", \"x y\"]\nenv: [OPENAI_API_KEY, CODEX_HOME]\nloadSession: true\nresume: false\n---\n",
			want: &External{Command: "codex-acp", Args: []string{"-c", "x y"}, Env: []string{"OPENAI_API_KEY", "CODEX_HOME"}, LoadSession: &yes, Resume: &no}},
		{name: "command only", format: FormatOurs, text: "---\ndescription: gemini\ncommand: gemini\nargs: [--acp]\n---\n",
			want: &External{Command: "gemini", Args: []string{"--acp"}}},
		{name: "env value refused", format: FormatOurs, text: "---\ndescription: x\ncommand: a\nenv: [KEY=secret]\n---\n",
			wantErr: "never their values"},
		{name: "bad env name", format: FormatOurs, text: "---\ndescription: x\ncommand: a\nenv: [\"1KEY\"]\n---\n",
			wantErr: "not a variable name"},
		{name: "args without command", format: FormatOurs, text: "---\ndescription: x\nargs: [a]\n---\n",
			wantErr: "needs a command"},
		{name: "model with command", format: FormatOurs, text: "---\ndescription: x\ncommand: a\nmodel: openai/gpt-5\n---\n",
			wantErr: "model does not apply to an external agent"},
		{name: "tools with command", format: FormatOurs, text: "---\ndescription: x\ncommand: a\ntools: [read]\n---\n",
			wantErr: "tools does not apply"},
		{name: "args not a list", format: FormatOurs, text: "---\ndescription: x\ncommand: a\nargs: --acp\n---\n",
			wantErr: "args must be a list"},
		{name: "loadSession not a bool", format: FormatOurs, text: "---\ndescription: x\ncommand: a\nloadSession: maybe\n---\n",
			wantErr: "loadSession must be true or false"},
		{name: "empty command", format: FormatOurs, text: "---\ndescription: x\ncommand: \" \"\n---\n",
			wantErr: "command must name a program"},
		{name: "claude format ignores it", format: FormatClaude, text: "---\ndescription: x\ncommand: a\n---\n",
			note: `key "command" is not mapped`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, probs := Parse("/p/.acp-agent/agents/x.md", tt.format, []byte(tt.text))
			if tt.wantErr != "" {
				if def != nil || len(probs) != 1 || !strings.Contains(probs[0].Message, tt.wantErr) {
					t.Fatalf("def %+v, problems %v; want skipped with %q", def, probs, tt.wantErr)
				}
				return
			}
			if def == nil {
				t.Fatalf("skipped: %v", probs)
			}
			if tt.note != "" {
				if def.External != nil || len(probs) != 1 || !strings.Contains(probs[0].Message, tt.note) {
					t.Fatalf("external %+v, problems %v", def.External, probs)
				}
				return
			}
			e := def.External
			if e == nil || e.Command != tt.want.Command || strings.Join(e.Args, "|") != strings.Join(tt.want.Args, "|") ||
				strings.Join(e.Env, "|") != strings.Join(tt.want.Env, "|") || !sameBool(e.LoadSession, tt.want.LoadSession) || !sameBool(e.Resume, tt.want.Resume) {
				t.Fatalf("external %+v, want %+v", e, tt.want)
			}
		})
	}
}

func sameBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestCommandLineQuotes(t *testing.T) {
	for _, tt := range []struct {
		e    External
		want string
	}{
		{External{Command: "gemini", Args: []string{"--acp"}}, "gemini --acp"},
		{External{Command: "/opt/my agent/bin", Args: []string{"it's", ""}}, `'/opt/my agent/bin' 'it'\''s' ''`},
		{External{Command: "npx", Args: []string{"-y", "@zed-industries/claude-code-acp@latest"}}, "npx -y @zed-industries/claude-code-acp@latest"},
	} {
		if got := tt.e.CommandLine(); got != tt.want {
			t.Errorf("CommandLine() = %s, want %s", got, tt.want)
		}
	}
}
