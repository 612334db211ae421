package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// imports lists the non-standard packages pkg imports: directly, or with
// deps also transitively (pkg itself included).
func importsOf(t *testing.T, pkg string, deps bool) []string {
	t.Helper()
	args := []string{"list", "-f", `{{range .Imports}}{{.}} {{end}}`, pkg}
	if deps {
		args = []string{"list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, pkg}
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var got []string
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			got = append(got, p)
		}
	}
	return got
}

// The store seam: persistence frames, locks, truncates and fsyncs lines
// and knows the session vocabulary only; the vocabulary (with the repair
// of an interrupted turn) depends on nothing of ours; the agent loop
// reaches storage only through the Journal it declares, so it imports no
// more than its own vocabulary, model and tool packages, and the context
// policy packages (budget, compact).
func TestStoreSeam(t *testing.T) {
	tests := []struct {
		pkg     string
		deps    bool     // transitive (true) or direct imports
		allowed []string // packages (and their subpackages) allowed
	}{
		{module + "/persistence/...", true, []string{module + "/persistence", module + "/agent/session", "github.com/google/uuid"}},
		{module + "/agent/session", true, []string{module + "/agent/session", "github.com/google/uuid"}},
		{module + "/agent", false, []string{module + "/agent/session", module + "/agent/model", module + "/agent/tool", module + "/agent/budget", module + "/agent/compact"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			for _, d := range importsOf(t, tt.pkg, tt.deps) {
				ok := false
				for _, a := range tt.allowed {
					if d == a || strings.HasPrefix(d, a+"/") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s depends on %s; allowed: %v", tt.pkg, d, tt.allowed)
				}
			}
		})
	}
}
