package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// startsGit are the calls that start a program, with the index of the
// argument naming it.
var startsGit = map[string]int{
	"exec.Command": 0, "exec.CommandContext": 1, "exec.LookPath": 0,
	"os.StartProcess": 0, "syscall.Exec": 0, "syscall.ForkExec": 0, "unix.Exec": 0,
}

// gitStarts returns where f starts git by name (a "git" literal, or a
// constant or variable of the file initialised to one) other than
// through internal/gitrun.
func gitStarts(fset *token.FileSet, f *ast.File) []string {
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		i, ok := startsGit[pkg.Name+"."+sel.Sel.Name]
		if !ok || i >= len(call.Args) || !namesGit(call.Args[i]) {
			return true
		}
		found = append(found, fset.Position(call.Pos()).String()+": "+pkg.Name+"."+sel.Sel.Name)
		return true
	})
	return found
}

// namesGit reports whether e is the string "git" (or a path ending in
// /git), directly or through an identifier declared with that value.
func namesGit(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return err == nil && (s == "git" || strings.HasSuffix(s, "/git") || s == "git.exe")
	case *ast.Ident:
		if e.Obj == nil {
			return false
		}
		if vs, ok := e.Obj.Decl.(*ast.ValueSpec); ok {
			for i, name := range vs.Names {
				if name.Name == e.Name && i < len(vs.Values) {
					return namesGit(vs.Values[i])
				}
			}
		}
		if as, ok := e.Obj.Decl.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
			for i, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == e.Name {
					return namesGit(as.Rhs[i])
				}
			}
		}
	}
	return false
}

// TestGitStartsOnlyThroughGitrun (issue 51): every git the agent runs
// itself goes through internal/gitrun, which drops the GIT_* variables
// of the agent's environment and turns off the fsmonitor, hooks and
// filters a repository's config names. No product file (tests aside, for
// every platform) starts git by name another way.
func TestGitStartsOnlyThroughGitrun(t *testing.T) {
	// The detector finds what it must, so a pass means something.
	probe := `package p
const bin = "git"
func f(ctx context.Context) {
	exec.Command("git", "status")
	exec.CommandContext(ctx, "/usr/bin/git", "status")
	exec.Command(bin)
	g := "git"
	exec.LookPath(g)
	exec.Command("bash", "-c", "git status")
	exec.Command("gitk")
}`
	fset := token.NewFileSet()
	pf, err := parser.ParseFile(fset, "probe.go", probe, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitStarts(fset, pf); len(got) != 4 {
		t.Fatalf("the detector found %d of the probe's 4 git starts: %v", len(got), got)
	}

	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := "/internal/gitrun"
	files := 0
	for _, dir := range strings.Fields(string(out)) {
		if strings.HasSuffix(filepath.ToSlash(dir), allowed) {
			continue
		}
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range names {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			files++
			for _, at := range gitStarts(fset, f) {
				t.Errorf("%s starts git directly: run it through internal/gitrun (gitrun.Command)", at)
			}
		}
	}
	if files < 200 {
		t.Fatalf("checked %d files: the module is not where the test looks", files)
	}
}
