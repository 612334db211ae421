package scenarios

// This file runs a user's own scenario directory (a recording made with
// exec --record, or one written by hand): "scenario run --dir" prints its
// transcript, "scenario test --dir" compares its recordings with the
// goldens stored next to it and "--update" rewrites them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// DirScenarioFile is the scenario file of a scenario directory.
const DirScenarioFile = "scenario.yaml"

// GoldenDir is the directory of a scenario directory's goldens.
const GoldenDir = "golden"

// GoldenNames are the goldens a scenario directory holds, as
// GoldenDir/<name>.golden.
// The human-readable transcript comes first, so its diff is read first.
var GoldenNames = []string{"transcript", "wire", "sessions", "requests"}

// LoadDir parses dir/scenario.yaml.
func LoadDir(dir string) (*Scenario, error) {
	file := filepath.Join(dir, DirScenarioFile)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err // names the path and why
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return Parse(file, filepath.Base(abs), data)
}

// RunScenario runs sc against the real composition in a fresh temporary
// directory that is removed afterwards, and returns its recording.
func RunScenario(ctx context.Context, sc *Scenario, logger *slog.Logger) (*Recording, error) {
	root, err := os.MkdirTemp("", "acp-agent-scenario-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return execute(ctx, sc, Composition, root, logger)
}

// goldenFiles pairs each golden name with its bytes in rec.
func goldenFiles(rec *Recording) map[string][]byte {
	return map[string][]byte{"wire": rec.Wire, "sessions": rec.Sessions, "requests": rec.Requests, "transcript": rec.Transcript}
}

// GoldenMismatchError reports the goldens of a scenario directory a run
// did not reproduce; Diffs holds a unified diff per golden (golden, then
// the run's), in GoldenNames order.
type GoldenMismatchError struct {
	Dir   string
	Diffs []GoldenDiff
}

// GoldenDiff is one golden's difference; Missing when the golden file
// does not exist.
type GoldenDiff struct {
	Name    string
	Missing bool
	Diff    string
}

func (e *GoldenMismatchError) Error() string {
	var b strings.Builder
	names := make([]string, len(e.Diffs))
	for i, d := range e.Diffs {
		names[i] = d.Name
	}
	fmt.Fprintf(&b, "%s: the replay differs from %d golden(s): %s (rerun with --update to accept it)", e.Dir, len(e.Diffs), strings.Join(names, ", "))
	for _, d := range e.Diffs {
		if d.Missing {
			fmt.Fprintf(&b, "\n%s: no golden (record one with --update)", filepath.Join(e.Dir, GoldenDir, d.Name+".golden"))
			continue
		}
		b.WriteString("\n" + d.Diff)
	}
	return b.String()
}

// Code is the stable code of a golden mismatch.
func (e *GoldenMismatchError) Code() string { return "GOLDEN_MISMATCH" }

// TestDir runs the scenario of dir and compares its recording with
// dir/golden/*.golden: a difference returns a *GoldenMismatchError with a
// unified diff per golden. With update it writes the goldens instead
// (and reports on out which ones changed).
func TestDir(ctx context.Context, dir string, update bool, out io.Writer, logger *slog.Logger) error {
	sc, err := LoadDir(dir)
	if err != nil {
		return err
	}
	rec, err := RunScenario(ctx, sc, logger)
	if err != nil {
		return err
	}
	got := goldenFiles(rec)
	gdir := filepath.Join(dir, GoldenDir)
	if update {
		if err := os.MkdirAll(gdir, 0o755); err != nil {
			return err
		}
	}
	mismatch := &GoldenMismatchError{Dir: dir}
	for _, name := range GoldenNames {
		path := filepath.Join(gdir, name+".golden")
		want, err := os.ReadFile(path)
		missing := errors.Is(err, os.ErrNotExist)
		if err != nil && !missing {
			return err
		}
		if !missing && bytes.Equal(want, got[name]) {
			continue
		}
		if update {
			if err := os.WriteFile(path, got[name], 0o644); err != nil {
				return err
			}
			fmt.Fprintf(out, "updated %s\n", path)
			continue
		}
		d := GoldenDiff{Name: name, Missing: missing}
		if !missing {
			d.Diff = unifiedDiff(path, "replay", string(want), string(got[name]))
		}
		mismatch.Diffs = append(mismatch.Diffs, d)
	}
	if len(mismatch.Diffs) > 0 {
		return mismatch
	}
	if !update {
		fmt.Fprintf(out, "ok %s (%d goldens)\n", dir, len(GoldenNames))
	}
	return nil
}

// unifiedDiff is a unified diff of want (the golden) and got, with three
// lines of context; a long run of changes is cut after maxDiffLines.
func unifiedDiff(from, to, want, got string) string {
	s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(want), B: difflib.SplitLines(got),
		FromFile: from, ToFile: to, Context: 3,
	})
	if err != nil {
		return err.Error()
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if r := []rune(l); len(r) > maxDiffLine {
			lines[i] = string(r[:maxDiffLine]) + fmt.Sprintf("… (%d more characters)\n", len(r)-maxDiffLine)
		}
	}
	s = strings.Join(lines, "")
	if len(lines) > maxDiffLines {
		s = strings.Join(lines[:maxDiffLines], "") + fmt.Sprintf("... (%d more diff lines)\n", len(lines)-maxDiffLines)
	}
	return s
}

// maxDiffLines bounds the diff printed per golden, maxDiffLine each of
// its lines (session logs carry whole system prompts on one line).
const (
	maxDiffLines = 400
	maxDiffLine  = 400
)
