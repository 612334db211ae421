// Package subagenttest builds a complete in-memory subagent stack for
// tests: a live session store, the agent registry, a subagent Runtime with
// the in-process spawn and fork providers, an agent factory wiring the
// delegation and control tools, and a func-based fake model.
//
// Layering: test support only; it imports subagent, driver/inprocess and
// the agent packages, never persistence (tests that need durability pass
// their own Durable and attach their persister through Config).
package subagenttest
