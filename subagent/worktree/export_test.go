package worktree

// CloseForTest drops o's lock without ending it, as a killed process does.
func CloseForTest(o *Open) { _ = o.f.Close() }
