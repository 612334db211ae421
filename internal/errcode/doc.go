// Package errcode owns the one shape of this module's typed errors: a
// stable, wire-visible code of a package's own code type, a message for
// people and an optional cause. Each package keeps its own code type and
// catalogue (acp.Code, subagent.Code, openai.Code) and uses Coded either
// as its error type (an alias) or embedded in a richer one, so callers
// branch on codes the same way everywhere: errors.As to the package's
// type, errors.Is against a value with the same code, or ErrorCode.
//
// It is a leaf: it imports only the standard library and must not import
// any package of this module.
//
// Values are immutable once built: safe to share between goroutines.
package errcode
