package layering

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADocFile: every package of the module (go list
// ./...) has a doc.go whose package comment says what the package owns,
// its layer and what it must not import. Parsing one small file per
// package keeps the test cheap.
func TestEveryPackageHasADocFile(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Dir}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found %d packages: the module is not where the test looks", len(lines))
	}
	for _, line := range lines {
		pkg, dir, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("go list line %q", line)
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments)
		switch {
		case err != nil:
			t.Errorf("%s: no doc.go: %v", pkg, err)
		case f.Doc == nil || strings.TrimSpace(f.Doc.Text()) == "":
			t.Errorf("%s: doc.go has no package comment", pkg)
		}
	}
}

// TestCompositionRootDoesNotImportTheCommandLine: app (the composition
// root, shared by serving, exec and the scenario runner) never depends on
// the command line built over it; cmd/acp-agent wires the two.
func TestCompositionRootDoesNotImportTheCommandLine(t *testing.T) {
	for _, pkg := range []string{module + "/app", module + "/app/headless", module + "/agent/model/recording/live"} {
		for _, d := range deps(t, pkg) {
			if d == module+"/app/cli" || strings.HasPrefix(d, module+"/app/cli/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	// The recorders sit beside recording, below the composition.
	for _, d := range deps(t, module+"/agent/model/recording/live") {
		if d == module+"/app" || strings.HasPrefix(d, module+"/app/") || d == module+"/acp" {
			t.Errorf("agent/model/recording/live depends on %s", d)
		}
	}
}
