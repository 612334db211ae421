package persistence

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzStreamMatchesDecode: the streaming reader Load uses gives exactly
// decodeLog's view of the same bytes (events, valid size, torn flag) or
// the same corruption (line and offset). Tiny read buffers are not needed
// to reach the long-line path: lines longer than the buffer are seeded.
//
// Run: go test ./persistence -run '^$' -fuzz FuzzStreamMatchesDecode -fuzztime 60s
func FuzzStreamMatchesDecode(f *testing.F) {
	addLogSeeds(f)
	dir := f.TempDir()
	path := filepath.Join(dir, "s1.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		want, werr := decodeLog("s1", path, data)
		got, gerr := streamLog("s1", path, file, int64(len(data)))
		var wc, gc *CorruptError
		switch {
		case werr == nil && gerr == nil:
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("stream view %+v\nwant %+v", got, want)
			}
		case errors.As(werr, &wc) && errors.As(gerr, &gc):
			if wc.Line != gc.Line || wc.Offset != gc.Offset {
				t.Fatalf("stream corrupt at line %d (byte %d), decode at line %d (byte %d)", gc.Line, gc.Offset, wc.Line, wc.Offset)
			}
		default:
			t.Fatalf("stream error %v, decode error %v", gerr, werr)
		}
	})
}

// TestStreamLongLines: lines longer than the read buffer take the
// assembly path and still match decodeLog.
func TestStreamLongLines(t *testing.T) {
	big := make([]byte, 3*streamBuffer)
	for i := range big {
		big[i] = 'x'
	}
	head := headerLine(t, "s1")
	ev := []byte(`{"type":"x/note","seq":0,"time":1,"data":{"text":"` + string(big) + `"},"ignorable":true}`)
	tests := map[string][]byte{
		"long event":      append(append(append([]byte{}, head...), ev...), '\n'),
		"long torn tail":  append(append([]byte{}, head...), ev[:len(ev)-3]...),
		"long junk final": append(append(append([]byte{}, head...), big...), '\n'),
		"long junk first": append(append(append(append(append([]byte{}, head...), big...), '\n'), ev...), '\n'),
	}
	dir := t.TempDir()
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "s1.jsonl")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want, werr := decodeLog("s1", path, data)
			got, gerr := streamLog("s1", path, f, int64(len(data)))
			if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("stream %+v, %v\nwant %+v, %v", got.good, gerr, want.good, werr)
			}
		})
	}
}
