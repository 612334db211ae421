package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// writeLargeLog writes a session log of about size bytes made of complete
// turns: a user message, streamed text (40 chunks), the assistant message,
// a tool call and its result. Turns are complete, so loading it appends
// nothing.
func writeLargeLog(tb testing.TB, dir, id string, size int64) {
	tb.Helper()
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(sdir, id+".jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	line, err := session.MarshalHeaderLine(session.Header{ID: id, CreatedAt: 1_700_000_000_000, Cwd: dir})
	if err != nil {
		tb.Fatal(err)
	}
	w.Write(append(line, '\n'))
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var seq int64
	var written int64
	add := func(typ string, data any, opts ...func(*session.Event)) {
		ev := session.Event{Type: typ, Seq: seq, Time: 1_700_000_000_000 + seq, Data: session.MustData(data)}
		if session.SurfaceTypes[typ] {
			ev.SurfaceOp = session.AppendOp
		}
		for _, o := range opts {
			o(&ev)
		}
		if err := enc.Encode(ev); err != nil {
			tb.Fatal(err)
		}
		written += int64(len(ev.Data)) + 80
		seq++
	}
	word := "the quick brown fox jumps over the lazy dog while streaming tokens "
	chunkText := strings.Repeat(word, 6)
	for turn := 1; written < size; turn++ {
		add(session.TypeTurnStart, session.TurnData{Turn: turn})
		add(session.TypeUserMessage, session.Message{ID: fmt.Sprintf("u%d", turn), Role: session.RoleUser,
			Content: []session.Block{session.Text("Please look at the code and explain turn " + fmt.Sprint(turn))}, Source: session.Source{Kind: session.SourceUser}})
		add(session.TypeStepStart, session.StepData{Turn: turn, Step: 1})
		var chunks []int64
		for range 40 {
			chunks = append(chunks, seq)
			add(session.TypeAssistantChunk, session.AssistantChunkData{Turn: turn, Step: 1, Chunk: session.Chunk{Type: session.ChunkText, Text: chunkText}})
		}
		callID := fmt.Sprintf("call_%d", turn)
		add(session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: 1, Message: session.Message{
			ID: fmt.Sprintf("a%d", turn), Role: session.RoleAssistant,
			Content: []session.Block{session.Text(strings.Repeat(chunkText, 40)), {Type: session.BlockToolCall, ID: callID, Name: "read", Arguments: `{"path":"main.go"}`}},
			Source:  session.Source{Kind: session.SourceModel, Provider: "scripted"}}, Finish: "tool-calls"},
			func(ev *session.Event) { ev.SourceEventSeqs = chunks })
		call := seq
		add(session.TypeToolCall, session.ToolCallData{Turn: turn, Step: 1, CallID: callID, Name: "read", Arguments: `{"path":"main.go"}`})
		add(session.TypeToolResult, session.ToolResultData{Turn: turn, Step: 1, Message: session.Message{
			ID: fmt.Sprintf("r%d", turn), Role: session.RoleUser, Source: session.Source{Kind: session.SourceTool, CallID: callID},
			Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: callID, Content: []session.Block{session.Text(strings.Repeat(word, 30))}}}}},
			func(ev *session.Event) { ev.SourceEventSeqs = []int64{call} })
		add(session.TypeStepEnd, session.StepData{Turn: turn, Step: 1})
		add(session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkLoadLargeSession measures session/load of a 10 MB and a 100 MB
// log through a freshly built binary: the time from the request to its
// response (the whole replay is on the wire before it), the number of
// updates replayed, and the process's peak resident set (getrusage
// maxrss, read after it exits) in MB and as a multiple of the log size.
//
//	go test ./cmd/acp-agent -run '^$' -bench BenchmarkLoadLargeSession -benchtime 3x
func BenchmarkLoadLargeSession(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "acp-agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, mb := range []int64{10, 100} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			data := b.TempDir()
			const id = "large-session"
			writeLargeLog(b, data, id, mb<<20)
			st, err := os.Stat(filepath.Join(data, "sessions", id+".jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			var rss, updates int64
			b.ResetTimer()
			for range b.N {
				d, r, n := loadOnce(b, bin, data, id)
				total += d
				rss = max(rss, r)
				updates = n
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "load-ms")
			b.ReportMetric(float64(rss)/(1<<20), "maxrss-MB")
			b.ReportMetric(float64(rss)/float64(st.Size()), "rss/log")
			b.ReportMetric(float64(st.Size())/(1<<20), "log-MB")
			b.ReportMetric(float64(updates), "updates")
		})
	}
}

// loadOnce starts the binary, loads id, and returns the load time, the
// peak RSS in bytes and the number of session/update notifications.
func loadOnce(b *testing.B, bin, data, id string) (time.Duration, int64, int64) {
	cmd := exec.Command(bin, "--data-dir", data, "--log-level", "error")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReaderSize(stdout, 1<<20)
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	if _, err := r.ReadBytes('\n'); err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`+"\n", id, data)
	var updates int64
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: read its rest.
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
		}
		if err != nil {
			b.Fatalf("reading replay: %v", err)
		}
		if bytes.Contains(line[:min(len(line), 64)], []byte(`"method":"session/update"`)) {
			updates++
			continue
		}
		if bytes.Contains(line, []byte(`"id":2`)) {
			if bytes.Contains(line, []byte(`"error"`)) {
				b.Fatalf("session/load failed: %s", line)
			}
			break
		}
	}
	elapsed := time.Since(began)
	stdin.Close()
	io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var rss int64
	if ru != nil {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return elapsed, rss, updates
}
