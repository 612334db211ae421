package acp_test

import (
	"fmt"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// BenchmarkWriteTurn is one prompt turn whose model writes a file once,
// asking permission (allowed once) — through the client's fs and the
// permission round trip, or locally. It measures what the workspace adds
// to a turn: Env resolution, the flushes before client requests, and the
// client requests themselves.
func BenchmarkWriteTurn(b *testing.B) {
	script := writeScript(`{"path":"b.txt","content":"bench"}`)
	for _, fs := range []bool{true, false} {
		name := "local"
		if fs {
			name = "client-fs"
		}
		b.Run(name, func(b *testing.B) {
			ctx := ctxFor(b)
			answers := make([]string, b.N)
			for i := range answers {
				answers[i] = "allow-once"
			}
			c := newWSClient(fs, false, answers...)
			e := startWS(b, loadScript(b, script), c)
			cwd := tempCwd(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				id := e.newSession(ctx, cwd)
				b.StartTimer()
				r, err := e.prompt(ctx, id, fmt.Sprint("write ", i))
				if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
					b.Fatalf("prompt = %v, %v", r, err)
				}
				<-c.askedCh
			}
		})
	}
}
