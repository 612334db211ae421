package main

// Tests that keep the documentation true to the command line: every flag,
// environment variable and command that `help` lists is documented in
// docs/configuration.md, and every acp-agent command line of the README is
// one the command line accepts.

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/scenarios"
)

// helpOf runs `acp-agent help PATH...` and returns its output.
func helpOf(t *testing.T, path ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"help"}, path...), strings.NewReader(""), &out, &errOut, func(string) string { return "" }, scenarios.Command())
	if code != 0 {
		t.Fatalf("help %v: exit %d: %s", path, code, errOut.String())
	}
	return out.String()
}

// section returns the lines of the help section titled title ("Flags:").
func section(help, title string) []string {
	var lines []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == title:
			in = true
		case in && l == "":
			return lines
		case in:
			lines = append(lines, l)
		}
	}
	return lines
}

// helpSurface walks the help of acp-agent and of every command and returns
// the command paths, flags and environment variables it lists.
func helpSurface(t *testing.T) (commands, flags, envs []string) {
	root := helpOf(t)
	for _, l := range section(root, "Environment (a flag wins over its variable):") {
		if f := strings.Fields(l); len(f) > 0 {
			envs = append(envs, f[0])
		}
	}
	if len(envs) == 0 {
		t.Fatal("no Environment section in the root help")
	}
	seen := map[string]bool{}
	var walk func(path []string, help string)
	walk = func(path []string, help string) {
		for _, l := range section(help, "Flags:") {
			if strings.HasPrefix(l, "  --") {
				name := strings.Fields(l)[0]
				if !seen[name] {
					seen[name] = true
					flags = append(flags, name)
				}
			}
		}
		for _, l := range section(help, "Commands:") {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			sub := append(append([]string{}, path...), f[0])
			commands = append(commands, strings.Join(sub, " "))
			walk(sub, helpOf(t, sub...))
		}
	}
	walk(nil, root)
	return commands, flags, envs
}

// TestConfigurationDocumentsTheHelp: docs/configuration.md names every
// flag (as `--name`), environment variable and command of the help, so a
// flag added without documentation fails here.
func TestConfigurationDocumentsTheHelp(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	commands, flags, envs := helpSurface(t)
	if len(commands) < 6 || len(flags) < 10 {
		t.Fatalf("help surface too small to be real: commands %v, flags %v", commands, flags)
	}
	for _, f := range flags {
		if !regexp.MustCompile("`" + regexp.QuoteMeta(f) + "[` =]").MatchString(text) {
			t.Errorf("docs/configuration.md does not document the flag %s (as `%s ...`)", f, f)
		}
	}
	for _, e := range envs {
		if !strings.Contains(text, "`"+e) {
			t.Errorf("docs/configuration.md does not document the environment variable %s", e)
		}
	}
	for _, c := range commands {
		if !strings.Contains(text, "`"+c+"`") && !strings.Contains(text, "`acp-agent "+c) {
			t.Errorf("docs/configuration.md does not document the command %q", c)
		}
	}
}

// readmeCommand finds an acp-agent command line in the README: at the
// start of a code line or of a `code span`, through go run or the binary.
var readmeCommand = regexp.MustCompile("(?m)(?:^|`)(?:go run \\./cmd/acp-agent|\\./acp-agent|acp-agent)((?: [^`#\\n]*)?)(?:`|#|$)")

// TestREADMECommandsRun: every acp-agent command line of the README is
// accepted by the command line: run in process against a temporary data
// directory with empty stdin, none is a usage error (exit 2).
func TestREADMECommandsRun(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	matches := readmeCommand.FindAllStringSubmatch(string(readme), -1)
	if len(matches) < 3 {
		t.Fatalf("found %d acp-agent command lines in the README, want the demo, help and more", len(matches))
	}
	for _, m := range matches {
		args := strings.Fields(strings.TrimSpace(m[1]))
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{cli.EnvDataDir: dir, "HOME": dir, "ANTHROPIC_API_KEY": "test", "DEEPSEEK_API_KEY": "test", "OPENAI_API_KEY": "test"}
			var out, errOut bytes.Buffer
			code := cli.Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] }, scenarios.Command())
			if code == cli.ExitUsage {
				t.Errorf("README command `acp-agent %s` is a usage error:\n%s", strings.Join(args, " "), errOut.String())
			}
		})
	}
}
