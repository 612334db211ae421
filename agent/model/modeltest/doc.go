// Package modeltest holds fixtures the model providers' tests share: a
// conversation that grows call by call, as the agent loop sends it, and a
// tool list, for the tests that a request's serialized prefix stays
// byte-stable (prompt caching). Only tests import it.
//
// Layer: test support below agent/model; it holds no state and must not
// import acp, app, persistence or subagent.
package modeltest
