package workspace

// This file names the record of a running local command in the session
// log: written (durably) before the command starts, so that a restart
// after the agent died can find and kill what the command left.

// TypeProcess is the (ignorable) session event type of a started local
// command.
const TypeProcess = "workspace/process"

// ProcessData is the payload of TypeProcess.
type ProcessData struct {
	// Session is the session whose call ran the command (a child's,
	// recorded in its root's log); CallID the call.
	Session string `json:"session"`
	CallID  string `json:"callId"`
	// Marker is the "NAME=value" environment entry every process of the
	// command carries (its process group included).
	Marker string `json:"marker"`
}

// MarkerVar is the environment variable that marks every process of one
// command: processes that left the command's process group (setsid)
// still carry it.
const MarkerVar = "ACP_AGENT_COMMAND"

// ProcessMarker is the marker of call callID of session sessionID:
// deterministic (scenario logs stay stable) and unique per command.
func ProcessMarker(sessionID, callID string) string {
	return MarkerVar + "=" + sessionID + "/" + callID
}
