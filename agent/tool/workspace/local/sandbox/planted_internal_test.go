package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPlantedLinksWalk measures what looking at every symlink for a
// planted repository adds to the guard's walk, in a pnpm-like tree of
// 20,000 folder links (each leading, through "..", to another folder of
// the tree): plant=false is the walk without the look.
func BenchmarkPlantedLinksWalk(b *testing.B) {
	dir := b.TempDir()
	store := filepath.Join(dir, "node_modules", ".pnpm")
	for i := range 20_000 {
		nm := filepath.Join(store, fmt.Sprintf("p%05d", i), "node_modules")
		if err := os.MkdirAll(filepath.Join(nm, "p"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Symlink("../../p00000/node_modules/p", filepath.Join(nm, "dep")); err != nil {
			b.Fatal(err)
		}
	}
	for _, with := range []bool{false, true} {
		b.Run(fmt.Sprint("plant=", with), func(b *testing.B) {
			for b.Loop() {
				var plant *plantScope
				if with {
					plant = newPlantScope([]string{dir}, b.TempDir())
				}
				if _, _, ok := walkProtected([]string{dir}, nil, false, plant); !ok {
					b.Fatal("the walk hit its bound")
				}
				if plant != nil && len(plant.found) != 0 {
					b.Fatalf("links inside taken for planted: %v", plant.found)
				}
			}
		})
	}
}
