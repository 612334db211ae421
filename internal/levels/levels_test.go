package levels

import (
	"slices"
	"testing"
)

func TestDown(t *testing.T) {
	tests := []struct {
		name, root, cwd string
		want            []string
	}{
		{"below the root", "/r", "/r/a/b", []string{"/r", "/r/a", "/r/a/b"}},
		{"at the root", "/r", "/r", []string{"/r"}},
		{"unclean paths", "/r/", "/r/./a//b/", []string{"/r", "/r/a", "/r/a/b"}},
		{"outside the root", "/r", "/elsewhere", []string{"/elsewhere"}},
		{"a sibling sharing a prefix", "/r", "/rr/a", []string{"/rr/a"}},
		{"above the root", "/r/a", "/r", []string{"/r"}},
		{"no root", "", "/x/y", []string{"/x/y"}},
		{"the filesystem root", "/", "/a/b", []string{"/", "/a", "/a/b"}},
		{"a dot-dot name inside", "/r", "/r/..a", []string{"/r", "/r/..a"}},
	}
	for _, tt := range tests {
		if got := Down(tt.root, tt.cwd); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Down(%q, %q) = %q, want %q", tt.name, tt.root, tt.cwd, got, tt.want)
		}
	}
}
