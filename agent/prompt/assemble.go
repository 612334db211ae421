package prompt

import "context"

// Assemble probes the environment, loads the instructions and builds the
// prompt of one session. A session without a cwd (tests, embedders) gets
// no git facts and no project instructions: the process's own directory
// is not the session's.
func Assemble(ctx context.Context, c Config) string {
	in := c.Input
	probe := func() Env {
		if c.Pending != nil {
			return c.Pending.Env(ctx)
		}
		return Probe(ctx, c.Cwd, c.Probe)
	}
	if c.Cwd == "" {
		in.Env = probe()
		in.Env.Cwd = "(unknown)"
		in.Instructions = LoadInstructions(InstructionOptions{UserFile: c.UserFile, Cap: c.Cap, Cwd: ""})
		return Build(in)
	}
	in.Env = probe()
	in.Roots = c.Roots
	in.Instructions = LoadInstructions(InstructionOptions{Cwd: c.Cwd, GitRoot: in.Env.GitRoot, UserFile: c.UserFile, Cap: c.Cap})
	return Build(in)
}
