package scenarios

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sebdah/goldie/v2"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
)

// testLogger sends the composition's logs to the test output (shown on
// failure or with -v), without timestamps.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// goldens lists the recordings compared per scenario, by golden name.
func goldens(rec *Recording) []struct {
	name string
	data []byte
} {
	return []struct {
		name string
		data []byte
	}{
		{"wire", rec.Wire},
		{"sessions", rec.Sessions},
		{"requests", rec.Requests},
		{"transcript", rec.Transcript},
	}
}

// TestScenarios runs every embedded scenario twice against the real
// composition: both runs must record byte-identical output (determinism
// by construction), and the recording must match the goldens in
// snapshots/<name>/. Refresh with GOLDIE_UPDATE=1 go test ./scenarios or
// go test ./scenarios -update, then review the diff.
func TestScenarios(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no scenarios embedded")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.ExternalAgents {
				needAgentBinary(t)
			}
			if sc.Sandbox != nil && sandbox.ProbeKernel().ABI < 1 {
				t.Skip("this kernel has no Landlock: a sandbox scenario cannot run here")
			}
			// A safety net, not a timing assertion: a scenario stuck in a
			// wait fails with the wait's last observed state.
			ctx, cancel := context.WithTimeoutCause(t.Context(), 2*time.Minute, errors.New("scenario did not finish within 2 minutes"))
			defer cancel()
			first, err := Record(ctx, sc, Composition, t.TempDir(), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			second, err := Record(ctx, sc, Composition, t.TempDir(), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			a, b := goldens(first), goldens(second)
			for i := range a {
				if !bytes.Equal(a[i].data, b[i].data) {
					t.Errorf("%s: two runs recorded different %s:\n%s", name, a[i].name, goldie.Diff(goldie.ClassicDiff, string(b[i].data), string(a[i].data)))
				}
			}
			g := goldie.New(t, goldie.WithFixtureDir(filepath.Join("..", "snapshots", name)))
			for _, gl := range a {
				// One subtest per golden, so a failure names the file
				// (snapshots/<name>/<golden>.golden).
				t.Run(gl.name, func(t *testing.T) { g.Assert(t, gl.name, gl.data) })
			}
		})
	}
}

// BenchmarkScenario measures one complete run (fresh data directory,
// composition start, all steps, shutdown, recording) per scenario.
func BenchmarkScenario(b *testing.B) {
	for _, name := range []string{"prompt-cancel", "subagent-list-agents", "subagent-cold-resume"} {
		b.Run(name, func(b *testing.B) {
			sc, err := Load(name)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Record(b.Context(), sc, Composition, b.TempDir(), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
