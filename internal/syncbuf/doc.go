// Package syncbuf owns Buffer, a bytes.Buffer that one goroutine may read
// while another writes into it (a child process's output, a client's
// stream). It imports only the standard library.
//
// A Buffer lives as long as its owner (a test) keeps it; every method locks.
// It must not import any package of this module.
package syncbuf
