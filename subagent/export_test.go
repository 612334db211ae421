package subagent

// SetDrainBegan installs fn as rt's drain-began hook: Drain calls it once
// admission is closed, before it waits for in-flight work (tests begin a
// drain inside a start and continue the start once admission is closed).
func SetDrainBegan(rt *Runtime, fn func()) { rt.Continuations.drainBegan = fn }
