// Package beneath reads the agent's own configuration files (agent
// definitions, skills) the way the workspace tools open files inside the
// cwd: through an os.Root, so a path that leaves its anchor directory
// (through "..", an absolute symlink or a relative one climbing out) is
// refused by the kernel-level walk, race-free, instead of being followed.
//
// An anchor is the directory a set of files is read beneath: the top of a
// project walk (its git root) for project files; the person's own
// folders use Anywhere (their files may link anywhere: plain reads). Readers hand it
// absolute paths; it opens each anchor once.
//
// It imports only the standard library, so leaf parsers (agent/agentdef,
// agent/skill) can use it; it must never import the tools, the agent or
// anything above them.
package beneath
