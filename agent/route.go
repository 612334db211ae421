package agent

import "github.com/acp-agent/acp-agent/agent/model"

// CurrentRoute returns the route the agent's next model request uses:
// Options.RouteNow's answer when it has one, else Options.Route. A child
// delegated now inherits it (package subagent).
func (a *Agent) CurrentRoute() model.Route {
	if a.opts.RouteNow != nil {
		if r := a.opts.RouteNow(); r != (model.Route{}) {
			return r
		}
	}
	return a.opts.Route
}
