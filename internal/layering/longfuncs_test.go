package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxFuncLines is the longest body a product function has without saying
// why it must be that long.
const maxFuncLines = 80

// saysWhyLong matches a doc comment that explains a long body ("It is
// long because ...", "It is long on purpose: ...").
var saysWhyLong = regexp.MustCompile(`(?i)\bis\s+long\s+(because|on\s+purpose)\b`)

// TestLongFunctionsSayWhy: no product function (tests and testdata aside)
// has a body over maxFuncLines lines unless its doc comment says why it
// must be long. A long function is a place where readers lose the thread;
// the comment makes its length a decision rather than an accident.
func TestLongFunctionsSayWhy(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		dir := fields[0]
		for _, name := range fields[1:] {
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				checked++
				n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
				if n <= maxFuncLines || (fd.Doc != nil && saysWhyLong.MatchString(fd.Doc.Text())) {
					continue
				}
				rel, _ := filepath.Rel(filepath.Join(dir, ".."), path)
				t.Errorf("%s: %s is %d lines (over %d) and its doc comment does not say why it is long (\"It is long because ...\")",
					rel, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
	if checked < 500 {
		t.Fatalf("checked %d functions: the module is not where the test looks", checked)
	}
}
