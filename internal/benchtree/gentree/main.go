package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/acp-agent/acp-agent/internal/benchtree"
)

func main() {
	out := flag.String("out", "", "the directory to write the tree into (must not exist)")
	files := flag.Int("files", benchtree.Large.Files, "about how many files")
	mb := flag.Int64("mb", benchtree.Large.Bytes>>20, "about how many MB of content")
	seed := flag.Uint64("seed", benchtree.Large.Seed, "the tree's seed")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gentree: -out is required")
		os.Exit(2)
	}
	if _, err := os.Stat(*out); err == nil {
		fmt.Fprintf(os.Stderr, "gentree: %s exists\n", *out)
		os.Exit(1)
	}
	st, err := benchtree.Generate(*out, benchtree.Options{Files: *files, Bytes: *mb << 20, Seed: *seed})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gentree: %d files (%d binaries, %d .gitignore), %d dirs, %d MB in %s\n",
		st.Files, st.Binaries, st.IgnoreFiles, st.Dirs, st.Bytes>>20, *out)
}
