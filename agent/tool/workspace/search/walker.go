package search

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// walker reads a directory tree with up to GOMAXPROCS goroutines while
// the caller's goroutine visits it depth-first in lexical order. Every
// directory is a dirNode that is read exactly once, by whoever claims it
// first: a worker running ahead, or the visit itself when it gets there
// first. The visit alone counts entries, applies the limit (max) and
// calls fn, so results and limits are the same as a sequential walk's;
// the workers only stop claiming once they have read max entries (the
// visit reads whatever it still needs itself).
type walker struct {
	ig *ignores
	// max is the entries visited before the walk stops (MaxVisited).
	max int
	// entered, when set (tests), is told each directory read.
	entered func(path string)

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []*dirNode // a stack: children pushed in reverse, so reads run ahead in visit order
	closed bool
	read   atomic.Int64 // entries read by workers
}

// dirNode is one directory of the walk.
type dirNode struct {
	path string // absolute
	rel  string // relative to the ignore domain root, slash-separated
	// inherited are the ignore rules in force from above; layer adds
	// the directory's own ignore file (set when read).
	inherited, layer *ignoreLayer
	claimed          atomic.Bool
	ready            chan struct{} // closed once read
	entries          []nodeEntry
	err              error
}

// nodeEntry is one entry of a read directory and how the walk treats it.
type nodeEntry struct {
	d     fs.DirEntry
	kind  entryKind
	child *dirNode // for entryDir
}

type entryKind uint8

const (
	entryFile    entryKind = iota // a candidate: everything but a directory
	entryDir                      // a directory to enter
	entrySkipped                  // a version-control directory
	entryIgnored                  // ignored by the rules
)

func newWalker(ig *ignores) *walker {
	w := &walker{ig: ig, max: MaxVisited}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// run walks dir (see walk).
func (w *walker) run(ctx context.Context, dir string, fn func(path string, d fs.DirEntry) error) (limited bool, err error) {
	root := &dirNode{path: dir, ready: make(chan struct{})}
	if w.ig != nil {
		root.rel, root.inherited = w.ig.rootRel, w.ig.outer
	}
	var wg sync.WaitGroup
	defer func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.cond.Broadcast()
		wg.Wait()
	}()
	w.push(root)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() { w.work(ctx) })
	}
	v := visit{w: w, ctx: ctx, fn: fn, visited: 1}
	if err := v.ctx.Err(); err != nil {
		return false, err
	}
	err = v.dir(root, true)
	if errors.Is(err, errStop) {
		err = nil
	}
	return v.limited, err
}

// push queues nodes for the workers, the first to be read last.
func (w *walker) push(nodes ...*dirNode) {
	w.mu.Lock()
	w.queue = append(w.queue, nodes...)
	w.mu.Unlock()
	w.cond.Broadcast()
}

// work reads queued directories until the walk closes or the workers
// have read max entries.
func (w *walker) work(ctx context.Context) {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.cond.Wait()
		}
		if w.closed {
			w.mu.Unlock()
			return
		}
		n := w.queue[len(w.queue)-1]
		w.queue = w.queue[:len(w.queue)-1]
		w.mu.Unlock()
		if ctx.Err() != nil || w.read.Load() > int64(w.max) || !n.claimed.CompareAndSwap(false, true) {
			continue
		}
		w.readDir(n)
	}
}

// readDir reads n (claimed by the caller), classifies its entries and
// queues its subdirectories.
func (w *walker) readDir(n *dirNode) {
	if w.entered != nil {
		w.entered(n.path)
	}
	ents, err := os.ReadDir(n.path) // sorted by name
	if err != nil && len(ents) == 0 {
		n.err = err
		close(n.ready)
		return
	}
	n.layer = n.inherited
	if w.ig != nil {
		if i, ok := slices.BinarySearchFunc(ents, ignoreFile, func(e fs.DirEntry, name string) int {
			return strings.Compare(e.Name(), name)
		}); ok && ents[i].Type().IsRegular() {
			n.layer = n.layer.push(readIgnoreFile(joinPath(n.path, ignoreFile), n.rel, false))
		}
	}
	n.entries = make([]nodeEntry, len(ents))
	for i, e := range ents {
		ne := nodeEntry{d: e}
		isDir := e.IsDir()
		switch {
		case isDir && skippedDirs[e.Name()]:
			ne.kind = entrySkipped
		case n.layer != nil && n.layer.ignored(n.rel, e.Name(), isDir):
			ne.kind = entryIgnored
		case isDir:
			ne.kind = entryDir
			ne.child = &dirNode{path: joinPath(n.path, e.Name()), inherited: n.layer, ready: make(chan struct{})}
			if w.ig != nil {
				ne.child.rel = joinRel(n.rel, e.Name())
			}
		}
		n.entries[i] = ne
	}
	close(n.ready)
	// Queue the subdirectories for the workers, whoever read n.
	if w.read.Add(int64(len(n.entries))) > int64(w.max) {
		return
	}
	var children []*dirNode
	for i := len(n.entries) - 1; i >= 0; i-- {
		if c := n.entries[i].child; c != nil {
			children = append(children, c)
		}
	}
	if len(children) > 0 {
		w.push(children...)
	}
}

// visit is the depth-first, in-order pass over the tree.
type visit struct {
	w       *walker
	ctx     context.Context
	fn      func(path string, d fs.DirEntry) error
	visited int
	limited bool
}

// dir visits n: it reads n itself when no worker has claimed it yet,
// else waits for the worker's read.
func (v *visit) dir(n *dirNode, isRoot bool) error {
	if n.claimed.CompareAndSwap(false, true) {
		v.w.readDir(n)
	} else {
		<-n.ready
	}
	if n.err != nil {
		if isRoot {
			return n.err
		}
		return nil // unreadable: search the rest
	}
	for _, e := range n.entries {
		v.visited++
		if v.visited%256 == 1 {
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
		if v.visited > v.w.max {
			v.limited = true
			return errStop
		}
		switch e.kind {
		case entryIgnored:
			v.w.ig.skipped++
		case entryDir:
			if err := v.dir(e.child, false); err != nil {
				return err
			}
		case entryFile:
			if err := v.fn(joinPath(n.path, e.d.Name()), e.d); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinPath joins a clean absolute directory and a name (cheaper than
// filepath.Join, which cleans again).
func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
