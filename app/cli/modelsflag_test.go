package cli

import (
	"flag"
	"io"
	"testing"
)

func TestModelFlagRepeatsAndReplacesTheEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"env only", "script:/a.yaml,script:/b.yaml", nil, "script:/a.yaml,script:/b.yaml"},
		{"flag replaces env", "script:/env.yaml", []string{"--model", "openai/gpt-4.1"}, "openai/gpt-4.1"},
		{"repeated", "", []string{"--model", "openai/gpt-4.1", "--model", "deepseek/deepseek-chat"}, "openai/gpt-4.1,deepseek/deepseek-chat"},
		{"repeated replaces env", "script:/env.yaml", []string{"--model", "script:/a.yaml", "--model", "script:/b.yaml"}, "script:/a.yaml,script:/b.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := flagsFromEnv(func(k string) string {
				if k == EnvModel {
					return tt.env
				}
				return ""
			})
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f.register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if f.Model != tt.want {
				t.Errorf("Model = %q, want %q", f.Model, tt.want)
			}
			// A subcommand's own --model replaces what the root parsed.
			sub := flag.NewFlagSet("sub", flag.ContinueOnError)
			sub.SetOutput(io.Discard)
			f.register(sub)
			if err := sub.Parse([]string{"--model", "script:/sub.yaml"}); err != nil {
				t.Fatal(err)
			}
			if f.Model != "script:/sub.yaml" {
				t.Errorf("after subcommand flag: Model = %q", f.Model)
			}
		})
	}
}
