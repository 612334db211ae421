// Package recording tees a real model's replies into a keyless scenario:
// Recorder.Wrap decorates a model.Model so that every reply each call
// streamed (text, reasoning, tool calls with id, name and arguments,
// usage, finish, or the error it failed with) is kept under the script
// key and call index the scripted model (agent/model/scripted) replays it
// by: model.Caller.ScriptKey ("main", a child's delegation label,
// "<key>/compact" for a compaction summary) and model.Caller.Call. It also
// snapshots the workspace files a tool touched (Touched: called at the
// tool layer once the gate allowed a read, edit or write, with the path
// the call resolved to, before the tool reads or changes it; AddFile for
// files a search found), size-capped, only inside the working directory;
// secret-looking files (SecretFilePatterns) and files the settings' deny
// rules cover get a Placeholder instead. Write renders the
// scenario directory (scenario.yaml: model script, client steps, files)
// documented in scenarios/README.md ("Recording a session"). Every
// string written passes through the redactor: secret values (API keys,
// variables named like secrets, long _URL/_PAT/_DSN/_WEBHOOK values) and
// Authorization / Bearer / token values never reach the files. Produced
// says whether a run got any reply: a run that did not must leave an
// earlier recording alone. Tool results are not recorded: a replay runs the
// tools for real against the snapshot.
//
// Layering: imports agent/model, agent/model/scripted (its Reply type is
// the script's schema), agent/session, go.yaml.in/yaml/v3 and the
// standard library. The app package plugs it in (exec --record, and the
// served agent's --record). Write renames a temporary file into place.
//
// Concurrency: a Recorder is safe for concurrent use by many sessions'
// calls; Write must be called after the last call ended.
package recording
