package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The ACP adapter translates: the settings files are read by
// agent/settings, whose per-root cache and command environment live in
// agent/settings/rootpolicy; acp imports that package (and its type
// aliases), never the file loaders themselves. (agent/policy, the pure
// permission decision acp shares with a headless run, still sees the
// settings rules, so acp's transitive dependencies hold agent/settings;
// what is checked here is that acp's own code reads no settings file.)
func TestProtocolAdapterReadsNoSettingsFile(t *testing.T) {
	for _, imp := range importsOf(t, module+"/acp", false) {
		if imp == module+"/agent/settings" {
			t.Errorf("acp imports %s; settings reach it through agent/settings/rootpolicy", imp)
		}
	}
}

// The ACP adapter starts no process: no package it depends on is the
// local command runner (agent/tool/workspace/local, with its reaper and
// sandbox), and acp itself does not import os/exec. The one package
// of acp's dependencies that does is the MCP client (agent/tool/mcp),
// which starts the stdio servers an editor names in session/new; that
// exception is listed here so a new one fails.
func TestProtocolAdapterRunsNoProcess(t *testing.T) {
	forbidden := []string{module + "/agent/tool/workspace/local"}
	var ours []string
	for _, d := range deps(t, module+"/acp") {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("acp depends on the process package %s", d)
			}
		}
		if strings.Contains(d, "reaper") {
			t.Errorf("acp depends on the reaper %s", d)
		}
		if d == module+"/acp" || strings.HasPrefix(d, module+"/") {
			ours = append(ours, d)
		}
	}
	out, err := exec.Command("go", append([]string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}, ours...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{module + "/agent/tool/mcp"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || slices.Contains(allowed, fields[0]) {
			continue
		}
		if slices.Contains(fields[1:], "os/exec") {
			t.Errorf("%s (a dependency of acp, or acp itself) imports os/exec", fields[0])
		}
	}
}
