package openai

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

const benchChunks = 2000

// benchStream is an SSE body of benchChunks text deltas in the shape
// DeepSeek sends, then a finish chunk with usage.
func benchStream() []byte {
	var b bytes.Buffer
	for i := range benchChunks {
		fmt.Fprintf(&b, `data: {"id":"bench","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-chat","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"tok%d "},"logprobs":null,"finish_reason":null}]}`+"\n\n", i)
	}
	b.WriteString(`data: {"id":"bench","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-chat","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2000,"total_tokens":2010}}` + "\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkStreamChunk measures our streaming path per chunk against the
// loopback replay server. "raw-http" reads the same body line by line with
// no decoding: the difference is our cost (SDK decoding plus mapping).
// Allocations include the server side of the loopback, which is tiny (it
// writes one prebuilt buffer).
func BenchmarkStreamChunk(b *testing.B) {
	body := benchStream()
	r := newReplay(b, sseBytes(body))
	b.Run("provider", func(b *testing.B) {
		m := newModel(b, r.config())
		req := userReq("hi")
		measure(b, func() {
			n := 0
			for ck, err := range m.Stream(b.Context(), req) {
				if err != nil {
					b.Fatal(err)
				}
				if ck.Type == session.ChunkText {
					n++
				}
			}
			if n != benchChunks {
				b.Fatalf("got %d text chunks, want %d", n, benchChunks)
			}
		})
	})
	b.Run("raw-http", func(b *testing.B) {
		hc := r.srv.Client()
		measure(b, func() {
			resp, err := hc.Post(r.srv.URL+"/chat/completions", "application/json", bytes.NewReader([]byte(`{}`)))
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(resp.Body)
			n := 0
			for sc.Scan() {
				if bytes.HasPrefix(sc.Bytes(), []byte("data: {")) {
					n++
				}
			}
			resp.Body.Close()
			if n != benchChunks+1 || resp.StatusCode != http.StatusOK {
				b.Fatalf("got %d events, status %d", n, resp.StatusCode)
			}
		})
	})
}

func measure(b *testing.B, run func()) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		run()
	}
	runtime.ReadMemStats(&after)
	perChunk := float64(b.N * benchChunks)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perChunk, "ns/chunk")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perChunk, "allocs/chunk")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/perChunk, "B/chunk")
}
