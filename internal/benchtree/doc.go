// Package benchtree generates a directory tree shaped like a large
// source repository, for comparing the search tools with ripgrep: nested
// directories of source-like text files, nested .gitignore files with
// ignored build, dependency and log outputs, binaries, a .git directory
// with info/exclude, and a few rare marker words to search for. The same
// options and seed always give the same tree. Paths writes a plain tree of
// n files for a glob that returns exactly n paths (the glob benchmarks).
//
// Layering: standard library only; it imports no product package.
package benchtree
