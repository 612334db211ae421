package persistence

import (
	"context"
	"errors"
	"os"
	"testing"
)

func TestDeleteRemovesTheLogAndItsBackups(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeSession(t, dir, "s-1", nil)
	if err := os.WriteFile(path+".broken", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ps := openStore(t, dir)
	if err := ps.Delete("s-1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + ".broken"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Delete: %v", p, err)
		}
	}
	if err := ps.Delete("s-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
	if _, err := ps.Load(context.Background(), "s-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after Delete = %v, want ErrNotFound", err)
	}
}

func TestDeleteRefusesAHeldSessionAndLeavesIt(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeSession(t, dir, "s-1", nil)
	holder, other := openStore(t, dir), openStore(t, dir)
	if _, err := holder.Load(context.Background(), "s-1"); err != nil {
		t.Fatal(err)
	}
	for name, ps := range map[string]*Store{"the holder": holder, "another store": other} {
		var le *LockedError
		if err := ps.Delete("s-1"); !errors.As(err, &le) {
			t.Errorf("Delete by %s of a held session = %v, want *LockedError", name, err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("refused Delete removed the log: %v", err)
	}
	if err := holder.Release("s-1"); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete("s-1"); err != nil {
		t.Errorf("Delete once released = %v", err)
	}
}
