// Package idle owns the idle timeout of one provider request: a provider
// that stops sending bytes (before the response headers or mid-stream) is
// not waited on forever. Each attempt runs under the context of its own
// Watchdog, cancelled with an ErrIdle cause when no byte arrived for the
// timeout; the providers' retry loops decide what that means (retry before
// content, PROVIDER_IDLE_TIMEOUT after). It imports only the standard
// library.
//
// Layer: agent/model (below the providers). A Watchdog belongs to one
// attempt: the provider starts it with the attempt and stops it when the
// attempt ends; its timer (time.AfterFunc) is its only concurrency, and it
// must not import any package of this module.
package idle
