//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/reaper"
)

// A command run through a real ACP bash call (its marker is
// "<session id>/<call id>", not hex) runs in a cgroup of its own, which is
// gone once the command ended. Skipped, saying why, where this process's
// cgroup v2 directory is not writable.
func TestACPCommandRunsInItsCgroup(t *testing.T) {
	probe := reaper.CgroupPath(workspace.ProcessMarker("probe-session", "call_probe"))
	if probe == "" {
		t.Skip("no cgroup v2 mount: commands get no cgroup")
	}
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Skipf("this process's cgroup v2 directory is not writable (%v): commands get no cgroup", err)
	}
	_ = syscall.Rmdir(probe)
	dir := t.TempDir()
	cwd := filepath.Join(dir, "work")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `model:
  main:
    - tool_calls: [{id: call_cg, name: bash, arguments: '{"command": "grep ^0:: /proc/self/cgroup"}'}]
    - text: DONE
`
	p := startProc(t, "--data-dir", filepath.Join(dir, "data"), "--model", "script:"+writeScript(t, dir, script))
	p.answerPermissions("allow-once")
	sid := p.newSession(t, cwd)
	var res map[string]any
	p.call(t, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, &res)
	out := p.toolResult(t, "call_cg")
	name := reaper.CgroupName(workspace.ProcessMarker(sid, "call_cg"))
	if name == "" || !strings.Contains(out, "/"+name) {
		t.Fatalf("the command did not run in its cgroup %q: %s", name, out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(probe), name)); err == nil {
		t.Errorf("the command's cgroup %s is left after it ended", name)
	}
	p.stdin.Close()
	p.waitExit(t, exitBound)
}
