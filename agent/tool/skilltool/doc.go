// Package skilltool is the `skill` tool: it loads a skill (package
// agent/skill) for the model, that is the body of its SKILL.md and the
// list of the files in its folder, which the model then reads with the
// file tools (each read through the session's permission gate, as any
// read) and whose scripts it runs with `bash` (asked as any command).
// Its system-prompt section lists each skill's name and description,
// capped, with a note naming those left out.
//
// The tool serves the skills loaded when its session started (the set it
// is given); it reads nothing but the listing of a skill's folder,
// beneath the same root the skill was read beneath.
//
// Layering: it imports agent/skill, agent/tool, agent/session and
// agent/model only; never the agent loop, acp, subagent or app.
package skilltool
