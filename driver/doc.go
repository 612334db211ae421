// Package driver is the seam between the subagent runtime (the host) and the
// drivers that run its children (subagent-contract.md §2.2 "providers").
//
// What it owns: the vocabulary both sides share and nothing else —
//   - Driver (and Continuable): what the host calls to start a child;
//   - Host: the two calls a driver makes back (create a child, release it);
//   - Request, Capabilities, Run and Result: a start and its outcome;
//   - the stop-reason folds over a child's own log (stop.go), because a
//     driver settles one-shot runs and the host settles continuable epochs
//     from the same facts.
//
// The host resolves everything that is the runtime's business (the child's
// id, delegation depth, model route, durable descriptor, activations,
// lifecycle events) before or inside Host.CreateChild; a driver decides only
// how the child is seeded and how a one-shot run is delivered, cancelled and
// settled. The external driver (driver/external: a child that is another
// ACP agent's process) is started through the same Host; what runs its
// child is the agent the composition root's factory builds for it.
//
// Layering: driver imports agent and agent/session only. It must not import
// subagent, persistence, acp or app; driver/inprocess and subagent both
// import it, never each other (internal/layering enforces this).
package driver
