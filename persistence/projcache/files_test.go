package projcache_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/persistence/projcache"
)

// TestOpenRemovesTempLeftovers: a temp file a crashed writer left in
// projections/ is removed when the cache opens; a fresh one (a writer in
// another process may be between write and rename) and other files stay.
func TestOpenRemovesTempLeftovers(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, "projections")
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name → survives Open
		".s1.123.tmp":        false,
		".index.bin.456.tmp": false,
		".s2.789.tmp.keep":   true, // not ".tmp"-suffixed: a stray, left
		"s3.json":            true,
	}
	for name := range files {
		p := filepath.Join(pdir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	fresh := filepath.Join(pdir, ".s4.999.tmp")
	if err := os.WriteFile(fresh, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	files[".s4.999.tmp"] = true
	if _, err := projcache.Open(dir, projection.New()); err != nil {
		t.Fatal(err)
	}
	for name, survives := range files {
		_, err := os.Lstat(filepath.Join(pdir, name))
		if got := err == nil; got != survives {
			t.Errorf("%s: exists %v after Open, want %v", name, got, survives)
		}
	}
}

// TestSymlinkedRowNeverFollowed: a row that is a symlink to a file outside
// is a miss, never read; the next Put replaces the link, and the file it
// pointed to is unchanged.
func TestSymlinkedRowNeverFollowed(t *testing.T) {
	c, _, st, dir := setup(t)
	s := titled(t, st, "s1", "hello")
	outside := filepath.Join(t.TempDir(), "outside.json")
	secret := []byte(`{"id":"s1","createdAt":5000,"size":100,"asOfSeq":1,"units":{"title":{"stateVersion":1,"value":"\"forged\""}}}`)
	if err := os.WriteFile(outside, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	row := filepath.Join(dir, "projections", "s1.json")
	if err := os.Symlink(outside, row); err != nil {
		t.Fatal(err)
	}
	if vals, err := c.Get(s.Header(), 100); err != nil || vals != nil {
		t.Fatalf("Get through a symlink = %v, %v; want a miss", vals, err)
	}
	if wrote, err := c.Checkpoint(t.Context(), s, 1, 100); !wrote || err != nil {
		t.Fatalf("checkpoint wrote=%v err=%v", wrote, err)
	}
	if st, err := os.Lstat(row); err != nil || !st.Mode().IsRegular() {
		t.Errorf("row after Put: %v, %v; want a regular file", st, err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != string(secret) {
		t.Errorf("outside file changed: %q, %v", b, errors.Join(err))
	}
}
