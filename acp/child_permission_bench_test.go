package acp_test

import (
	"fmt"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
)

const childForegroundWriteScript = `
model:
  main:
    - tool_calls:
        - id: call-delegate
          name: subagent
          arguments: '{"description": "Writer", "prompt": "Write c.txt.", "run_in_background": false}'
    - text: CHILD_DONE
  Writer:
    - tool_calls:
        - id: call-w
          name: write
          arguments: '{"path": "c.txt", "content": "from the child\n"}'
    - text: WRITTEN
`

// BenchmarkChildPermissionTurn is one prompt turn whose foreground child
// writes a file once, asking permission on the root session (allowed
// once): the delegation, the child's turn, the permission round trip and
// the root-log records of the request and its outcome (two appends and
// two checkpoints, each holding the root's updates until durable). With
// fsync=true the checkpoints reach the disk.
//
// go test ./acp -run '^$' -bench BenchmarkChildPermissionTurn -benchmem
func BenchmarkChildPermissionTurn(b *testing.B) {
	for _, fsync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			ctx := ctxFor(b)
			answers := make([]string, b.N)
			for i := range answers {
				answers[i] = "allow-once"
			}
			c := newWSClient(true, false, answers...)
			e := startWS(b, loadScript(b, childForegroundWriteScript), c, func(cfg *app.Config, _ workspace.Resolver) {
				cfg.Testing.NoSync = !fsync
			})
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				// A fresh cwd: rewriting an unchanged file asks nothing.
				id := e.newSession(ctx, tempCwd(b))
				b.StartTimer()
				r, err := e.prompt(ctx, id, fmt.Sprint("delegate ", i))
				if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
					b.Fatalf("prompt = %v, %v", r, err)
				}
				select {
				case <-c.askedCh:
				case <-ctx.Done():
					b.Fatalf("the child never asked: %q", transcript(e.rec.snapshot(id)))
				}
			}
		})
	}
}
