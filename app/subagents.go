package app

// This file is the wiring point of the subagent runtime.
//
// LEAD: wireSubagents runs inside New after the session store, persistence,
// agent registry, model and tool registry exist and before the ACP server
// is built. Wire the runtime here:
//   - build the subagent runtime from a.Sessions, a.Persist, a.Agents,
//     a.Model and a.AgentOptions (children derive their options from it);
//   - add the model-facing tools to a.Tools (a.Tools.Add(t)): subagent,
//     subagent_fork, send_message, interrupt_agent, list_agents;
//   - register the UI catalog: a.Extensions["_acp-agent/subagents/list"] =
//     func(ctx, params) (any, error) {...} (advertised automatically under
//     agentCapabilities._meta["acp-agent"]["subagents/list"]);
//   - append the runtime's shutdown drain to a.Drainers (it runs after
//     prompts are cancelled, before top-level agents are closed) and any
//     release to a.Closers.

// wireSubagents attaches the subagent runtime to a. Nothing yet.
func wireSubagents(a *App) error {
	_ = a
	return nil
}
