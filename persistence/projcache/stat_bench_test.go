package projcache

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStatAll: the per-log stat of a scan over 1,000 to 50,000 logs,
// relative to the directory (what Scan does) and by full path (before),
// reported per log:
//
//	go test ./persistence/projcache -run '^$' -bench StatAll -benchtime 5x
func BenchmarkStatAll(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		dir := filepath.Join(b.TempDir(), "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("session-%05d", i)
			if err := os.WriteFile(filepath.Join(dir, ids[i]+".jsonl"), []byte("{}\n"), 0o600); err != nil {
				b.Fatal(err)
			}
		}
		for _, mode := range []string{"at", "path"} {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				for b.Loop() {
					for _, st := range statAllIn(dir, ids, nil, mode == "at") {
						if !st.regular {
							b.Fatal("not regular")
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/log")
			})
		}
	}
}
