// Package transcript owns the one readable rendering of a session log:
// a single walk that decodes each event once and hands it to a Style,
// which decides only how that event reads. Two styles exist because two
// readers with different needs exist, and both are kept byte-stable:
//
//   - Inspect, the "acp-agent sessions show" view for people: bracketed
//     headings, blank-line separated, completed turns silent;
//   - Compact, the scenarios' transcript.golden view: one line per event,
//     indented under "turn N", every turn boundary, title and queue
//     change shown.
//
// The header or framing around the events stays with each caller. It
// imports only agent/session and the standard library, and must not
// import acp, app, persistence, subagent or scenarios.
//
// Concurrency: a rendering is one synchronous walk over events the caller
// owns; the package holds no state.
package transcript
