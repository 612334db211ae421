package subagent

import "github.com/acp-agent/acp-agent/agent"

// liveAgents is the runtime's view of the live agent registry (nil: no
// registry, nothing is live).
type liveAgents struct{ reg *agent.Registry }

// get returns the registered agent id, or nil.
func (l liveAgents) get(id string) *agent.Agent {
	if l.reg == nil || id == "" {
		return nil
	}
	a, _ := l.reg.Get(id)
	return a
}

// exact reports whether a is the registry's current entry for its id.
func (l liveAgents) exact(a *agent.Agent) bool {
	return a != nil && l.get(a.ID()) == a
}

// ancestry returns a and every live ancestor reachable through
// parentSession in the agent registry.
func (l liveAgents) ancestry(a *agent.Agent) map[*agent.Agent]bool {
	out := map[*agent.Agent]bool{}
	seen := map[string]bool{}
	for cur := a; cur != nil && !seen[cur.ID()]; {
		seen[cur.ID()] = true
		out[cur] = true
		p := cur.Session().Header().ParentSession
		if p == "" {
			break
		}
		cur = l.get(p)
	}
	return out
}
