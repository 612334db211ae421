package gitrun

import (
	"slices"
	"strings"
	"testing"
)

func TestEnvDropsEveryGitVariable(t *testing.T) {
	base := []string{"HOME=/h", "GIT_DIR=/x/.git", "GIT_INDEX_FILE=/x/.git/index", "GIT_WORK_TREE=/x",
		"GIT_OBJECT_DIRECTORY=/x/o", "GIT_ALTERNATE_OBJECT_DIRECTORIES=/y", "GIT_COMMON_DIR=/x", "GIT_CONFIG_PARAMETERS='core.fsmonitor'='x'",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/evil", "GIT_EXTERNAL_DIFF=/evil", "PATH=/bin"}
	got := Env(base, "GIT_INDEX_FILE=/tmp/own")
	for _, kv := range got {
		if strings.HasPrefix(kv, "GIT_") && !slices.Contains(hardening, kv) && kv != "GIT_INDEX_FILE=/tmp/own" {
			t.Errorf("inherited %s", kv)
		}
	}
	for _, want := range append([]string{"HOME=/h", "PATH=/bin", "GIT_INDEX_FILE=/tmp/own"}, hardening...) {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	if !slices.Contains(got, "GIT_CONFIG_NOSYSTEM=1") {
		t.Error("no GIT_CONFIG_NOSYSTEM")
	}
}
