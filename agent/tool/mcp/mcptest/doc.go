// Package mcptest provides a small, deterministic MCP server for tests and
// keyless scenarios: over stdio (a test binary re-executing itself) and
// over streamable HTTP on loopback. It imports only the MCP SDK and the
// standard library.
//
// The server is named "demo" and offers:
//   - echo {text}: returns "echo: <text>" (annotated read-only);
//   - add {a, b}: returns the sum as text and as structuredContent {sum};
//   - fail {}: reports a tool error (isError) "the tool failed on purpose";
//   - image {}: returns a one-pixel PNG and a caption;
//   - wait {}: blocks until the call is cancelled or the serving
//     HTTPServer closes (for cancellation tests; a stateless HTTP server
//     cannot route a client's cancellation to the running call).
//
// Layer: test support. Each server lives until its test (or the re-executed
// process) closes it; it must not import any package of this module.
package mcptest
