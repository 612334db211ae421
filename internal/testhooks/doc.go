// Package testhooks owns the knobs of an agent process that only this
// module's tests, benchmarks and scenario runner turn: a model instance
// instead of a --model spec, a model observer, no fsync, storage and
// child fault injection, and crashing on handler panics. They reach the
// process through app.Config.Testing, whose type lives here: being
// internal, it keeps them out of what a program embedding acp-agent (or a
// person configuring it) can set, so app.Config is what a user configures.
//
// It declares plain data only; it may import the packages whose hook
// types it carries (agent/model, persistence, driver/inprocess) and must
// not import app, acp or scenarios.
//
// Concurrency: the hooks are set once, before the process is built, and only
// read afterwards.
package testhooks
