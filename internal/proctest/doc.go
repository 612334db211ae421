// Package proctest answers, for tests, whether processes have really gone:
// a command's process, or every member of its process group, read from
// /proc (Linux). A zombie waiting to be reaped counts as gone.
//
// Layering: standard library only; imported by tests alone.
//
// It holds no state.
package proctest
