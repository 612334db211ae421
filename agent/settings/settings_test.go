package settings_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRuleMatching(t *testing.T) {
	bash := func(cmd string) settings.Call { return settings.Call{Tool: "bash", Kind: "execute", Subject: cmd} }
	edit := func(p string) settings.Call { return settings.Call{Tool: "write", Kind: "edit", Subject: p} }
	read := func(p string) settings.Call { return settings.Call{Tool: "read", Kind: "read", Subject: p} }
	for _, tt := range []struct {
		rule     string
		call     settings.Call
		forAllow bool
		want     bool
	}{
		{"bash(go test *)", bash("go test ./..."), true, true},
		{"bash(go test *)", bash("go build ./..."), true, false},
		// An allow pattern never covers a joined command...
		{"bash(go test *)", bash("go test ./... && curl x | sh"), true, false},
		// ...but a deny pattern matches any part of one.
		{"bash(rm *)", bash("echo hi; rm -rf /"), false, true},
		{"bash", bash("anything at all"), true, true},
		{"edit(src/**)", edit("src/a/b.go"), true, true},
		{"edit(src/**)", edit("srcx/b.go"), true, false},
		{"edit(src/**)", settings.Call{Tool: "edit", Kind: "edit", Subject: "src/x.go"}, true, true},
		{"edit(*.go)", edit("a/b.go"), true, true},
		{"read(.env)", read(".env"), false, true},
		{"read(.env)", read("sub/.env"), false, true},
		{"read(.env)", read(".envrc"), false, false},
		{"read(.env)", settings.Call{Tool: "grep", Kind: "search", Subject: ".env"}, false, true},
		{"read(/etc/**)", read("/etc/passwd"), true, true},
		{"mcp__github__*", settings.Call{Tool: "mcp__github__create_issue", Kind: "other"}, true, true},
		{"mcp__github__*", settings.Call{Tool: "mcp__gitlab__x", Kind: "other"}, true, false},
		{"edit", bash("ls"), true, false},
	} {
		r, err := settings.ParseRule(tt.rule)
		if err != nil {
			t.Fatalf("%s: %v", tt.rule, err)
		}
		if got := r.Matches(tt.call, tt.forAllow); got != tt.want {
			t.Errorf("%s matches %+v (allow %v) = %v, want %v", tt.rule, tt.call, tt.forAllow, got, tt.want)
		}
	}
}

func TestPrecedenceAndLevels(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "config", "acp-agent", "settings.json")
	cwd := filepath.Join(dir, "proj")
	write(t, user, `{"permissions": {"allow": ["bash(go test *)", "bash(make *)", "read(.env)"], "deny": ["bash(curl *)"]},
  "env": {"include": ["GITHUB_TOKEN"]}, "sandbox": {"enabled": false}}`)
	// A cloned repository cannot grant itself rights: its allow is ignored.
	write(t, settings.ProjectPath(cwd), `{"permissions": {"allow": ["bash"], "ask": ["bash(make *)"], "deny": ["read(.env)"]},
  "env": {"include": ["AWS_SECRET_KEY"], "exclude": ["FOO"]}, "sandbox": {"enabled": true, "writablePaths": ["/"]}}`)
	p := settings.Load(user, cwd)
	if errs := p.Problems(); len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tt := range []struct {
		cmd  string
		want settings.Decision
	}{
		{"go test ./...", settings.Allow},
		{"make all", settings.Ask},      // project ask beats user allow
		{"curl x", settings.Deny},       // deny wins
		{"rm -rf build", settings.None}, // project "allow bash" is not applied
	} {
		if got, _ := p.Decide(settings.Call{Tool: "bash", Kind: "execute", Subject: tt.cmd}); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.cmd, got, tt.want)
		}
	}
	if got, rule := p.Decide(settings.Call{Tool: "read", Kind: "read", Subject: ".env"}); got != settings.Deny || rule != "read(.env)" {
		t.Errorf("read .env: %v %q, want the project's deny", got, rule)
	}
	env := p.Env()
	if strings.Join(env.Include, ",") != "GITHUB_TOKEN" || strings.Join(env.Exclude, ",") != "FOO" {
		t.Errorf("env = %+v: include from the user only, exclude from both", env)
	}
	sb := p.Sandbox()
	if sb.Enabled == nil || !*sb.Enabled || len(sb.WritablePaths) != 0 {
		t.Errorf("sandbox = %+v: the project turns it on but adds no writable path", sb)
	}
}

func TestMalformedFileReportedAndIgnored(t *testing.T) {
	for _, tt := range []struct {
		name, content string
		line          int
		what          string
	}{
		{"syntax", "{\n  \"permissions\": {\n    \"deny\": [\"bash\",]\n  }\n}", 3, "not valid JSON"},
		{"bad rule", "{\n  \"permissions\": {\n    \"deny\": [\n      \"bash(rm *\"\n    ]\n  }\n}", 4, "missing closing parenthesis"},
		{"wrong type", "{\n  \"permissions\": {\"deny\": \"bash\"}\n}", 2, "must be a"},
		{"unknown field", "{\n  \"permisions\": {}\n}", 2, "unknown field"},
		{"threshold above one", "{\n  \"context\": {\n    \"compactThreshold\": 1.5\n  }\n}", 3, "between 0 and 1"},
		{"negative window", "{\n  \"context\": {\"window\": -1}\n}", 2, "positive number of tokens"},
		{"window not a number", "{\n  \"context\": {\"window\": \"128k\"}\n}", 2, "must be a int"},
		{"model without provider", "{\n  \"context\": {\n    \"windows\": {\"llama3\": 8192}\n  }\n}", 3, "not PROVIDER/MODEL"},
		{"zero model window", "{\n  \"context\": {\n    \"windows\": {\n      \"openai-compatible/llama3\": 0\n    }\n  }\n}", 4, "positive number of tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cwd := t.TempDir()
			path := settings.ProjectPath(cwd)
			write(t, path, tt.content)
			p := settings.Load("", cwd)
			errs := p.Problems()
			var se *settings.Error
			if len(errs) != 1 || !errors.As(errs[0], &se) {
				t.Fatalf("problems = %v", errs)
			}
			if se.Code != settings.CodeInvalidSettings || se.File != path || se.Line != tt.line || !strings.Contains(se.Message, tt.what) {
				t.Errorf("error = %+v (%v), want line %d and %q", se, se, tt.line, tt.what)
			}
			if d, _ := p.Decide(settings.Call{Tool: "bash", Kind: "execute", Subject: "ls"}); d != settings.None {
				t.Errorf("a malformed file applied: %v", d)
			}
		})
	}
}

// TestContextFromTheUserFileOnly: the user file sets the context window
// and threshold; a project file cannot (the setting is reported, with its
// line, and left out while the rest of that file applies).
func TestContextFromTheUserFileOnly(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "u", "settings.json")
	cwd := filepath.Join(dir, "proj")
	write(t, user, `{"context": {"window": 131072, "compactThreshold": 0.7, "windows": {"openai-compatible/llama3": 8192}}}`)
	write(t, settings.ProjectPath(cwd), "{\n  \"permissions\": {\"deny\": [\"bash(curl *)\"]},\n  \"context\": {\"window\": 1000000, \"compactThreshold\": 1}\n}\n")
	p := settings.Load(user, cwd)
	if errs := p.Problems(); len(errs) > 0 {
		t.Fatal(errs)
	}
	c := p.Context()
	if c.Window != 131072 || c.CompactThreshold != 0.7 || len(c.Windows) != 1 || c.Windows["openai-compatible/llama3"] != 8192 {
		t.Errorf("context = %+v, want the user file's", c)
	}
	ign := p.Ignored()
	var se *settings.Error
	if len(ign) != 1 || !errors.As(ign[0], &se) || se.Code != settings.CodeIgnoredSetting || se.File != settings.ProjectPath(cwd) || se.Line != 3 {
		t.Fatalf("ignored = %v, want the project's context on line 3", ign)
	}
	if d, _ := p.Decide(settings.Call{Tool: "bash", Kind: "execute", Subject: "curl x"}); d != settings.Deny {
		t.Errorf("the rest of the project file is not applied: %v", d)
	}
	if c := settings.Load("", cwd).Context(); c.Window != 0 || c.CompactThreshold != 0 {
		t.Errorf("project alone sets the context: %+v", c)
	}
	if ign := settings.Load(user, "").Ignored(); len(ign) != 0 {
		t.Errorf("ignored without a project: %v", ign)
	}
	// Saving an "always allow" keeps the context section.
	if err := settings.Load(user, cwd).SaveAllow("bash(ls)"); err != nil {
		t.Fatal(err)
	}
	if c := settings.Load(user, cwd).Context(); c.Window != 131072 || c.Windows["openai-compatible/llama3"] != 8192 {
		t.Errorf("context after SaveAllow = %+v", c)
	}
}

// TestProjectSandboxOnlyTightens: a project file may turn the sandbox on
// and its network off; turning it off, allowing the network or making a
// path outside the project writable is reported and left out.
func TestProjectSandboxOnlyTightens(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name, user, project string
		want                settings.Sandbox
		ignored             []string // what the reports name, in order
	}{
		{"project turns it on", `{}`, `{"sandbox": {"enabled": true}}`, settings.Sandbox{Enabled: &yes}, nil},
		{"project cuts the network", `{"sandbox": {"enabled": true, "network": true}}`, `{"sandbox": {"network": false}}`,
			settings.Sandbox{Enabled: &yes, Network: &no}, nil},
		{"project cannot turn it off", `{"sandbox": {"enabled": true}}`, `{"sandbox": {"enabled": false}}`,
			settings.Sandbox{Enabled: &yes}, []string{"sandbox.enabled"}},
		{"project cannot allow the network", `{"sandbox": {"network": false}}`, `{"sandbox": {"enabled": true, "network": true}}`,
			settings.Sandbox{Enabled: &yes, Network: &no}, []string{"sandbox.network"}},
		{"project writable paths", `{"sandbox": {"writablePaths": ["/cache"]}}`, `{"sandbox": {"enabled": true, "writablePaths": ["build", "./out/x", "../sibling", "/etc", "PROJECT/gen"]}}`,
			settings.Sandbox{Enabled: &yes, WritablePaths: []string{"/cache"}}, []string{`"../sibling" is outside`, `"/etc" is outside`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			user, cwd := filepath.Join(dir, "user.json"), filepath.Join(dir, "proj")
			write(t, user, tt.user)
			write(t, settings.ProjectPath(cwd), strings.ReplaceAll(tt.project, "PROJECT", cwd))
			p := settings.Load(user, cwd)
			if errs := p.Problems(); len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := p.Sandbox(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sandbox = %s, want %s", show(got), show(tt.want))
			}
			ign := p.Ignored()
			if len(ign) != len(tt.ignored) {
				t.Fatalf("ignored = %v, want %d reports", ign, len(tt.ignored))
			}
			for i, err := range ign {
				var se *settings.Error
				if !errors.As(err, &se) || se.Code != settings.CodeIgnoredSetting || se.Line != 1 || !strings.Contains(se.Message, tt.ignored[i]) {
					t.Errorf("report %d = %v, want %s on line 1", i, err, tt.ignored[i])
				}
			}
		})
	}
}

func show(s settings.Sandbox) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestSaveAllowScopedToProject(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "u", "settings.json")
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	pa := settings.Load(user, a)
	if err := pa.SaveAllow("bash(go test ./...)"); err != nil {
		t.Fatal(err)
	}
	call := settings.Call{Tool: "bash", Kind: "execute", Subject: "go test ./..."}
	if d, _ := pa.Decide(call); d != settings.Allow {
		t.Errorf("saved rule not applied: %v", d)
	}
	if d, _ := settings.Load(user, a).Decide(call); d != settings.Allow {
		t.Errorf("saved rule not durable: %v", d)
	}
	if d, _ := settings.Load(user, b).Decide(call); d != settings.None {
		t.Errorf("a rule saved for project a applies in b: %v", d)
	}
	// A broken user file is never overwritten.
	write(t, user, "{broken")
	if err := settings.Load(user, a).SaveAllow("bash(ls)"); err == nil {
		t.Error("saved over a malformed user file")
	}
	if data, _ := os.ReadFile(user); string(data) != "{broken" {
		t.Errorf("user file changed: %q", data)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"permissions":{"allow":["bash(go test *)"],"deny":["read(.env)"]},"projects":{"/x":{"allow":["edit"]}}}`))
	f.Add([]byte(`{"env":{"include":["A*"]},"sandbox":{"enabled":true}}`))
	f.Add([]byte(`{"context":{"window":1,"compactThreshold":0.5,"windows":{"a/b":2}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := settings.Parse("f.json", data)
		if err != nil {
			return
		}
		for _, r := range append(append(file.Permissions.Allow, file.Permissions.Ask...), file.Permissions.Deny...) {
			rule, err := settings.ParseRule(r)
			if err != nil {
				t.Fatalf("accepted a bad rule %q", r)
			}
			rule.Matches(settings.Call{Tool: "bash", Kind: "execute", Subject: r}, true)
			rule.Matches(settings.Call{Tool: "read", Kind: "read", Subject: r}, false)
		}
		if c := file.Context; c.Window < 0 || c.CompactThreshold < 0 || c.CompactThreshold > 1 {
			t.Fatalf("accepted context %+v", c)
		}
		for name, w := range file.Context.Windows {
			if w <= 0 || !strings.Contains(name, "/") {
				t.Fatalf("accepted window %q: %d", name, w)
			}
		}
	})
}

// TestSubagentsFromTheUserFileOnly: subagents.maxBackground comes from the
// user file; a project's is reported and left out; a negative one makes
// the file invalid.
func TestSubagentsFromTheUserFileOnly(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "u", "settings.json")
	cwd := filepath.Join(dir, "proj")
	write(t, user, `{"subagents": {"maxBackground": 2}}`)
	write(t, settings.ProjectPath(cwd), "{\n  \"subagents\": {\"maxBackground\": 50}\n}\n")
	p := settings.Load(user, cwd)
	if errs := p.Problems(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := p.Subagents().MaxBackground; n != 2 {
		t.Errorf("maxBackground = %d, want the user's 2", n)
	}
	var se *settings.Error
	if ign := p.Ignored(); len(ign) != 1 || !errors.As(ign[0], &se) || se.Code != settings.CodeIgnoredSetting || se.Line != 2 {
		t.Fatalf("ignored = %v, want the project's subagents on line 2", ign)
	}
	if n := settings.Load("", cwd).Subagents().MaxBackground; n != 0 {
		t.Errorf("project alone sets maxBackground: %d", n)
	}
	write(t, user, "{\"subagents\": {\"maxBackground\": -1}}")
	if errs := settings.Load(user, "").Problems(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "subagents.maxBackground must be a positive") {
		t.Errorf("problems = %v", errs)
	}
}
