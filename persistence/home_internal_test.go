package persistence

import (
	"errors"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// Without $HOME the user database's home directory stands in; when that
// has none either, the error says which variable to set.
func TestHomeDir_FallsBackToTheUserDatabase(t *testing.T) {
	env := func(vals map[string]string) func(string) string { return func(k string) string { return vals[k] } }
	found := func() (*user.User, error) { return &user.User{HomeDir: "/home/someone"}, nil }
	tests := []struct {
		name    string
		env     map[string]string
		current func() (*user.User, error)
		want    string
		wantErr bool
	}{
		{"HOME wins", map[string]string{"HOME": "/h"}, found, "/h", false},
		{"user database", nil, found, "/home/someone", false},
		{"lookup fails", nil, func() (*user.User, error) { return nil, errors.New("no such user") }, "", true},
		{"no home recorded", nil, func() (*user.User, error) { return &user.User{}, nil }, "", true},
		{"relative home recorded", nil, func() (*user.User, error) { return &user.User{HomeDir: "home"}, nil }, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := homeDir(env(tc.env), tc.current)
			if tc.wantErr {
				if !errors.Is(err, ErrNoHome) || !strings.Contains(err.Error(), "set HOME") {
					t.Fatalf("err = %v, want ErrNoHome naming HOME", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("homeDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDefaultDir_WithoutHOME(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no user database entry here: %v", err)
	}
	t.Setenv("HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	dir, err := DefaultDir()
	if want := filepath.Join(u.HomeDir, ".local", "state", "acp-agent"); err != nil || dir != want {
		t.Fatalf("DefaultDir = %q, %v; want %q", dir, err, want)
	}
	if got := WithHome(func(string) string { return "" })("HOME"); got != u.HomeDir {
		t.Errorf("WithHome(HOME) = %q, want %q", got, u.HomeDir)
	}
}
