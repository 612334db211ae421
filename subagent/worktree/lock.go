package worktree

import (
	"context"
	"path/filepath"
	"sync"
)

// repoLocks holds one lock per repository root of this process: git
// steps on one repository (add, remove, prune, branch -D, the temporary
// index of Changes) run one at a time, so two siblings settling at once
// do not race inside git (a prune of one while the other's worktree is
// being removed, say).
var repoLocks sync.Map // cleaned root -> chan struct{} (capacity 1)

// Lock takes the lock of the repository rooted at repo, waiting under
// ctx; unlock gives it back.
func Lock(ctx context.Context, repo string) (unlock func(), err error) {
	v, _ := repoLocks.LoadOrStore(filepath.Clean(repo), make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
