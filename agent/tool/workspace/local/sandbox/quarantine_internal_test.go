package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A path created again and again is moved aside every time, and at most
// maxQuarantined copies of it are kept: the copy moved aside longest ago
// makes room for the newest.
func TestQuarantineKeepsABoundedNumberOfCopies(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, ".vscode")
	total := maxQuarantined + 7
	var last string
	for i := range total {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "tasks.json"), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		to, err := quarantine([]string{root}, p)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		last = to
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("round %d: %s is still there", i, p)
		}
		// Change times have a clock tick's resolution: keep rounds apart.
		time.Sleep(2 * time.Millisecond)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".vscode"+QuarantineSuffix) {
			t.Fatalf("unexpected entry %s", e.Name())
		}
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "tasks.json"))
		if err != nil {
			t.Fatal(err)
		}
		kept[string(b)] = true
	}
	if len(entries) != maxQuarantined {
		t.Fatalf("%d copies kept, want %d", len(entries), maxQuarantined)
	}
	// The newest maxQuarantined rounds are the ones kept.
	for i := total - maxQuarantined; i < total; i++ {
		if !kept[fmt.Sprint(i)] {
			t.Errorf("round %d's copy was removed; kept %v", i, kept)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(last, "tasks.json")); string(b) != fmt.Sprint(total-1) {
		t.Errorf("the last copy %s holds %q", last, b)
	}
}
