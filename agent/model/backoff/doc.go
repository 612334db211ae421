// Package backoff holds what every HTTP model provider does between
// attempts: reading the server's Retry-After and waiting for it, or for a
// cancelled context. Each provider keeps its own policy (which statuses
// retry, how many times, its base delay).
//
// Layering: standard library only.
//
// It holds no state: each wait belongs to the provider attempt that calls it
// and ends with its context.
package backoff
