package cli

import (
	"bytes"
	"context"
	"fmt"
	"github.com/acp-agent/acp-agent/app/storetest"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/persistence/projcache"
)

// BenchmarkSessionsCommand runs `acp-agent sessions` over 10,000 stored
// sessions: "index" with a valid catalog index (titles from its rows),
// "noindex" with the index deleted before every run (every header and
// every log read; the run rebuilds the index).
//
//	go test ./app -run '^$' -bench SessionsCommand -benchtime 3x -count 3 -benchmem
func BenchmarkSessionsCommand(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	storetest.WriteTitledSessions(b, dir, n)
	run := func(b *testing.B) {
		var errOut bytes.Buffer
		out := &countingWriter{}
		if code := Main(context.Background(), []string{"--data-dir", dir, "sessions"}, strings.NewReader(""), out, &errOut, noEnv); code != ExitOK {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
		if out.lines != n+1 {
			b.Fatalf("%d lines", out.lines)
		}
	}
	indexFile := filepath.Join(dir, "projections", projcache.IndexFile)
	for _, mode := range []string{"index", "noindex"} {
		b.Run(mode, func(b *testing.B) {
			run(b) // builds the index
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if mode == "noindex" {
					b.StopTimer()
					os.Remove(indexFile)
					b.StartTimer()
				}
				run(b)
			}
		})
	}
}

// countingWriter counts the lines written to it.
type countingWriter struct{ lines int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)

// The sessions table is the same with a valid, a deleted and a damaged
// index.
func TestSessionsCommandIgnoresIndexState(t *testing.T) {
	dir := t.TempDir()
	storetest.WriteTitledSessions(t, dir, 30)
	run := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), []string{"--data-dir", dir, "sessions"}, strings.NewReader(""), &out, &errOut, noEnv); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		return out.String()
	}
	want := run()
	if !strings.Contains(want, "Task number 29") {
		t.Fatalf("table:\n%s", want)
	}
	indexFile := filepath.Join(dir, "projections", projcache.IndexFile)
	if _, err := os.Stat(indexFile); err != nil {
		t.Fatalf("no index built: %v", err)
	}
	for _, damage := range []func(){
		func() {},
		func() { os.Remove(indexFile) },
		func() { os.WriteFile(indexFile, []byte("garbage"), 0o600) },
		func() { os.RemoveAll(filepath.Join(dir, "projections")) },
	} {
		damage()
		if got := run(); got != want {
			t.Fatalf("table differs:\n%s\nwant\n%s", got, want)
		}
	}
}

// BenchmarkSessionsScaling runs `acp-agent sessions` (valid index) over
// 1,000, 10,000 and 50,000 stored sessions and reports the cost per
// session (wall and CPU), which should stay flat:
//
//	go test ./app -run '^$' -bench SessionsScaling -benchtime 3x -benchmem
func BenchmarkSessionsScaling(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			storetest.WriteTitledSessions(b, dir, n)
			run := func(b *testing.B) {
				var errOut bytes.Buffer
				out := &countingWriter{}
				if code := Main(context.Background(), []string{"--data-dir", dir, "sessions"}, strings.NewReader(""), out, &errOut, noEnv); code != ExitOK {
					b.Fatalf("exit %d: %s", code, errOut.String())
				}
				if out.lines != n+1 {
					b.Fatalf("%d lines", out.lines)
				}
			}
			run(b) // builds the index
			perItem(b, n, "session", run)
		})
	}
}
