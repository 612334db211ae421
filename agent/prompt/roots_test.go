package prompt

import "testing"

func TestWithRootsReplacesTheEnvironmentLine(t *testing.T) {
	base := Build(Input{Env: Env{Cwd: "/w", OS: "linux", Arch: "amd64", Shell: "sh", Date: "2026-01-01"}})
	with := Build(Input{Env: Env{Cwd: "/w", OS: "linux", Arch: "amd64", Shell: "sh", Date: "2026-01-01"}, Roots: []string{"/a", "/b"}})
	for _, tt := range []struct {
		name  string
		text  string
		roots []string
		want  string
	}{
		{"added", base, []string{"/a", "/b"}, with},
		{"replaced", Build(Input{Env: Env{Cwd: "/w", OS: "linux", Arch: "amd64", Shell: "sh", Date: "2026-01-01"}, Roots: []string{"/old"}}), []string{"/a", "/b"}, with},
		{"dropped", with, nil, base},
		{"unchanged", with, []string{"/a", "/b"}, with},
	} {
		got, ok := WithRoots(tt.text, tt.roots)
		if !ok || got != tt.want {
			t.Errorf("%s: ok=%v\n got %q\nwant %q", tt.name, ok, got, tt.want)
		}
	}
	if _, ok := WithRoots("a prompt the agent did not build", []string{"/a"}); ok {
		t.Error("a prompt without an environment section was changed")
	}
}

func TestWithClientReplacesTheLastSection(t *testing.T) {
	env := Env{Cwd: "/w", OS: "linux", Arch: "amd64", Shell: "sh", Date: "2026-01-01"}
	base := Build(Input{Env: env, Extra: []string{"extra section"}})
	with := func(c string) string { return Build(Input{Env: env, Extra: []string{"extra section"}, Client: c}) }
	for _, tt := range []struct{ name, text, client, want string }{
		{"added", base, "be brief", with("be brief")},
		{"replaced", with("old"), "be brief", with("be brief")},
		{"dropped", with("old"), "", base},
		{"none", base, "", base},
	} {
		if got := WithClient(tt.text, tt.client); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
