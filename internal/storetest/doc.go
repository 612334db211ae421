// Package storetest writes data directories for tests and benchmarks:
// settled session logs with the projection cache rows a serving agent's
// checkpoints would have written, dated outside the catalog index's racy
// window.
//
// Layer: test support, imported only by _test.go files (of app and
// app/cli). It may import agent, persistence and subagent packages; no
// product package imports it. It holds no state beyond one writer's open
// cache, used by one test goroutine.
package storetest
