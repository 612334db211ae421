package persistence

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// BenchmarkDecodeLog compares the ways of turning the bytes of a 1 MiB
// log (typical events, page cache warm) into events, per MB:
//
//	read         readFile alone (the floor: open, stat, pread)
//	encoding/json  the previous decoder: json.Unmarshal of every line into
//	             a session.Event (validation, then a second decoding pass)
//	json.Valid   encoding/json's validation alone, no decoding
//	single-pass  decodeLog: fastEnvelope's one pass, payloads left raw
//
// go test ./persistence -run '^$' -bench DecodeLog -benchmem
func BenchmarkDecodeLog(b *testing.B) {
	dir := b.TempDir()
	generateStore(b, dir, 1, 1<<20)
	id := session.HashID("bench", 0)
	path := filepath.Join(dir, "sessions", id+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	body := data[bytes.IndexByte(data, '\n')+1:]
	lines := bytes.Split(bytes.TrimSuffix(body, []byte{'\n'}), []byte{'\n'})
	b.Run("read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := readFile(f, -1); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			events := make([]session.Event, 0, len(lines))
			for _, line := range lines {
				var ev session.Event
				if err := json.Unmarshal(line, &ev); err != nil {
					b.Fatal(err)
				}
				events = append(events, ev)
			}
		}
	})
	b.Run("json-valid", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			for _, line := range lines {
				if !json.Valid(line) {
					b.Fatal("invalid")
				}
			}
		}
	})
	b.Run("single-pass", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			v, err := decodeLog(id, path, data)
			if err != nil || len(v.events) != len(lines) {
				b.Fatal(err)
			}
		}
	})
}
