package acp

// This file defines the watch on the connection's output: once a write to
// the client fails (it closed our stdout, or its end of the pipe is gone),
// nothing sent later can arrive, so Serve ends as it does on stdin EOF.

import (
	"io"
	"sync"
)

// watchedWriter passes writes through and signals the first failure.
type watchedWriter struct {
	w      io.Writer
	once   sync.Once
	failed chan struct{} // closed at the first failed write
	err    error         // that failure; read after failed is closed
}

func newWatchedWriter(w io.Writer) *watchedWriter {
	return &watchedWriter{w: w, failed: make(chan struct{})}
}

func (ww *watchedWriter) Write(p []byte) (int, error) {
	n, err := ww.w.Write(p)
	if err != nil {
		ww.once.Do(func() {
			ww.err = err
			close(ww.failed)
		})
	}
	return n, err
}
