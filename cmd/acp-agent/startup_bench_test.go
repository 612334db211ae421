package main

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartToInitialize measures a freshly built binary from process
// start to the initialize response on stdout, and reports the median as
// median-ns (run with -benchtime=20x for the median of 20 starts).
func BenchmarkStartToInitialize(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "acp-agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	data := b.TempDir()
	var runs []time.Duration
	b.ResetTimer()
	for range b.N {
		began := time.Now()
		cmd := exec.Command(bin, "--data-dir", data, "--log-level", "error")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
		if _, err := bufio.NewReader(stdout).ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		runs = append(runs, time.Since(began))
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(runs)
	b.ReportMetric(float64(runs[len(runs)/2].Nanoseconds()), "median-ns")
}
