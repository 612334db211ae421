package persistence

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// List returns headers without reading log bodies: a session whose body is
// garbage, and one whose (sparse) body is far larger than memory, list
// fine; files with an unreadable header are skipped with a warning.
func TestListHeadersOnly(t *testing.T) {
	dir := t.TempDir()
	writeSession(t, dir, "b-normal", nil)
	sdir := filepath.Join(dir, "sessions")

	garbage := append(headerLine(t, "c-garbage"), bytes.Repeat([]byte("\x00not json{{{\n"), 1<<16)...)
	writeBytes(t, filepath.Join(sdir, "c-garbage.jsonl"), garbage)

	// 64 GiB sparse body: reading it would exhaust memory or time.
	huge := filepath.Join(sdir, "a-huge.jsonl")
	writeBytes(t, huge, headerLine(t, "a-huge"))
	if err := os.Truncate(huge, 64<<30); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}

	writeBytes(t, filepath.Join(sdir, "d-badheader.jsonl"), []byte("{\"type\":\"nope\"}\n"))
	writeBytes(t, filepath.Join(sdir, "e-noheader.jsonl"), bytes.Repeat([]byte("x"), 2*MaxHeaderLine))
	writeBytes(t, filepath.Join(sdir, "f-wrongid.jsonl"), headerLine(t, "other"))
	writeBytes(t, filepath.Join(sdir, ".g.0123.tmp"), headerLine(t, "g"))
	writeBytes(t, filepath.Join(sdir, "b-normal.jsonl.broken"), []byte("{"))
	os.Mkdir(filepath.Join(sdir, "h-dir.jsonl"), 0o700)

	var logs bytes.Buffer
	ps, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	got, err := ps.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.Header.ID)
		st, err := os.Stat(filepath.Join(sdir, e.Header.ID+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if e.Size != st.Size() || e.ModTime != st.ModTime().UnixMilli() {
			t.Errorf("%s: size %d mtime %d, want %d %d", e.Header.ID, e.Size, e.ModTime, st.Size(), st.ModTime().UnixMilli())
		}
	}
	if want := "a-huge,b-normal,c-garbage"; strings.Join(ids, ",") != want {
		t.Fatalf("listed %v, want %s", ids, want)
	}
	for _, skipped := range []string{"d-badheader", "e-noheader", "f-wrongid", "h-dir"} {
		if !strings.Contains(logs.String(), "session_id="+skipped) {
			t.Errorf("no warning for %s in:\n%s", skipped, logs.String())
		}
	}
}

// firstLine asks for one 4 KiB chunk when the header fits in it.
func TestFirstLineReadsLittle(t *testing.T) {
	hl := headerLine(t, "s1")
	tests := []struct {
		name     string
		body     []byte
		wantRead int
		wantErr  bool
	}{
		{"short file", hl, len(hl), false},
		{"long log", append(append([]byte(nil), hl...), bytes.Repeat([]byte("y"), 10<<20)...), 4 << 10, false},
		{"header over 4 KiB", append(append(bytes.Repeat([]byte(" "), 5000), hl...), bytes.Repeat([]byte("y"), 1<<20)...), MaxHeaderLine, false},
		{"no newline", bytes.Repeat([]byte("y"), 1<<20), MaxHeaderLine, true},
		{"empty", nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &countingReader{r: bytes.NewReader(tt.body)}
			line, err := firstLine(r, make([]byte, MaxHeaderLine))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if !tt.wantErr {
				if _, err := session.ParseHeaderLine(line, "s1"); err != nil {
					t.Fatal(err)
				}
			}
			if r.n != tt.wantRead {
				t.Fatalf("read %d bytes, want %d", r.n, tt.wantRead)
			}
		})
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestListCancelled(t *testing.T) {
	dir := t.TempDir()
	writeSession(t, dir, "s1", nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := openStore(t, dir).List(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("List: %v, want context.Canceled", err)
	}
}

// A directory that cannot be read fails the listing.
func TestListDirError(t *testing.T) {
	dir := t.TempDir()
	ps := openStore(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, "sessions")); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.List(t.Context()); err == nil {
		t.Fatal("List of a missing directory succeeded")
	}
}
