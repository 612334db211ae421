package search

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

// A hard link inside the cwd to an outside file counts as outside: a
// search of the cwd skips it without asking; grep on that file alone asks.
func TestGrepHardLinkCountsAsOutside(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.outside, "secret.txt")
	f.write(t, secret, "hello classified\n")
	if err := os.Link(secret, filepath.Join(f.cwd, "innocent.txt")); err != nil {
		t.Skipf("hard links across the temp dirs: %v", err)
	}
	f.perms.Decide = local.Reject
	res := f.call(t, GrepToolName, map[string]any{"pattern": "classified"})
	if strings.Contains(workspacetest.Text(res), "hello classified") || len(f.perms.Requests()) != 0 {
		t.Fatalf("a search of the cwd returned the hard-linked file: %q (%d requests)", workspacetest.Text(res), len(f.perms.Requests()))
	}
	res = f.call(t, GrepToolName, map[string]any{"pattern": "classified", "path": "innocent.txt"})
	if reqs := f.perms.Requests(); len(reqs) != 1 || !reqs[0].OutsideCwd {
		t.Fatalf("grep on the hard link: requests %+v", reqs)
	}
	if workspacetest.ErrCode(res) != workspace.CodePermissionRejected || strings.Contains(workspacetest.Text(res), "hello classified") {
		t.Fatalf("refused grep on the hard link: %q", workspacetest.Text(res))
	}
}
