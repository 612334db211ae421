// Package storetest writes data directories for tests and benchmarks:
// settled session logs with the projection cache rows a serving agent's
// checkpoints would have written, dated outside the catalog index's racy
// window.
//
// Layer: test support below app (not internal/: it writes through
// product packages, agent/projection, persistence/projcache and
// subagent), imported only by _test.go files of app and app/cli; no
// product package imports it. It holds no state beyond one writer's open
// cache, used by one test goroutine.
package storetest
