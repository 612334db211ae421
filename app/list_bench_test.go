package app

import (
	"github.com/acp-agent/acp-agent/app/storetest"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/persistence/projcache"
)

// BenchmarkSessionList answers session/list (the first page; every page
// scans the whole store) over 10,000 stored sessions of about 1 KiB with
// titles and cache rows: "index" starts from a valid catalog index,
// "noindex" has the index deleted before every run.
//
//	go test ./app -run '^$' -bench SessionList -benchtime 3x -benchmem
func BenchmarkSessionList(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	storetest.WriteTitledSessions(b, dir, n)
	a, err := New(Config{DataDir: dir, Testing: &testhooks.Hooks{NoSync: true}, Sources: &session.DeterministicSources{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	list := func(b *testing.B) {
		r, err := a.Server.ListSessions(b.Context(), acpsdk.ListSessionsRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Sessions) != acp.DefaultPageSize || r.NextCursor == nil || r.Sessions[0].Title == nil {
			b.Fatalf("%d sessions, cursor %v", len(r.Sessions), r.NextCursor)
		}
	}
	indexFile := filepath.Join(dir, "projections", projcache.IndexFile)
	for _, mode := range []string{"index", "noindex"} {
		b.Run(mode, func(b *testing.B) {
			list(b) // builds the index where one is used
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if mode == "noindex" {
					b.StopTimer()
					os.Remove(indexFile)
					b.StartTimer()
				}
				list(b)
			}
		})
	}
}
