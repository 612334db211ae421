package ownpaths

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClaims(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		run  func(p string) bool
		want bool
	}{
		{"created by us", func(p string) bool {
			end := Begin(p)
			end(os.Mkdir(p, 0o755) == nil)
			return Claimed(p)
		}, true},
		{"pending counts while the creation runs", func(p string) bool {
			end := Begin(p)
			defer end(false)
			return Claimed(p)
		}, true},
		{"someone else made it first", func(p string) bool {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			end := Begin(p)
			end(os.Mkdir(p, 0o755) == nil)
			return Claimed(p)
		}, false},
		{"replaced after our creation", func(p string) bool {
			end := Begin(p)
			end(os.Mkdir(p, 0o755) == nil)
			if err := os.Rename(p, p+".ours"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return Claimed(p)
		}, false},
		{"never claimed", func(p string) bool {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return Claimed(p)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, filepath.Base(t.Name()))
			if got := tt.run(p); got != tt.want {
				t.Fatalf("Claimed = %v, want %v", got, tt.want)
			}
		})
	}
}
