// Command gentree writes the benchtree tree for the side-by-side search
// comparison (scripts/bench-search.sh):
//
//	go run ./internal/benchtree/gentree -out /tmp/acp-search-tree
//
// Layer: a development tool over internal/benchtree; it is not part of
// the binary and must not import any product package. It runs once, on
// one goroutine, and writes a directory that must not exist yet.
package main
