package agentdef

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkLoad100 measures what a session start pays for 100 definitions
// (ours, in one project directory; the other directories are looked up
// and missing). The budget is 5 ms.
func BenchmarkLoad100(b *testing.B) {
	dir := b.TempDir()
	agents := filepath.Join(dir, "repo", ".acp-agent", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		text := fmt.Sprintf("---\nname: agent-%03d\ndescription: Agent number %d reviews one part of the code base\n"+
			"tools: [read, grep, glob]\ndisallowedTools: [bash]\nmodel: anthropic/claude-sonnet-4-5\nmode: background\n"+
			"maxTurns: 12\n---\nYou are agent %d. Read the code you are pointed at and report what you find,\n"+
			"with file and line, and nothing you did not check.\n", i, i, i)
		if err := os.WriteFile(filepath.Join(agents, fmt.Sprintf("agent-%03d.md", i)), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	o := Options{Cwd: filepath.Join(dir, "repo"), GitRoot: filepath.Join(dir, "repo"),
		ConfigHome: filepath.Join(dir, "config"), Home: filepath.Join(dir, "home")}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		s := Load(o)
		if s.Len() != 100 || len(s.Problems) != 0 {
			b.Fatalf("loaded %d, problems %v", s.Len(), s.Problems)
		}
	}
	// Wall time suffers on a shared machine; the process's CPU time per
	// load (user + system) is what a session start costs.
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkParseOne is the parsing part of one definition (no I/O).
func BenchmarkParseOne(b *testing.B) {
	data, err := os.ReadFile("testdata/project/.acp-agent/agents/reviewer.md")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if def, _ := Parse("reviewer.md", FormatOurs, data); def == nil {
			b.Fatal("not parsed")
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
