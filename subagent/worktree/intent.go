package worktree

// This file is the intent journal: a worktree is recorded durably before
// `git worktree add` runs, so a process killed (kill -9) while a child's
// worktree is being made, or before the child's own record of it is
// durable, leaves a file saying what to remove. The next process sweeps
// the journal (Sweep): an intent whose child recorded its worktree is
// finished (the file goes); any other is removed with its worktree and
// branch.
//
// Each intent file is held under an exclusive flock by the process making
// the worktree, for as long as the intent is open; a sweep skips a held
// one (another live process is making it). The kernel drops the lock of
// a killed process, so its intents become sweepable at once.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Intents is the journal folder of one data directory (one JSON file per
// worktree being made, named after the worktree). The zero value (Dir "")
// journals nothing.
type Intents struct {
	Dir string
	// Fault, when set, is called at each named step of making a worktree
	// (crash tests kill the process there; see the Fault* points).
	Fault func(point string)
}

// Named points of a worktree's making, in order (Intents.Fault).
const (
	// FaultIntent: the intent is durable, `git worktree add` not run.
	FaultIntent = "worktree-intent"
	// FaultAdded: the worktree is made, the child's record not yet.
	FaultAdded = "worktree-added"
	// FaultRecorded: the child's record is durable, the intent not yet
	// ended.
	FaultRecorded = "worktree-recorded"
)

// Step calls the fault hook at point.
func (in Intents) Step(point string) {
	if in.Fault != nil {
		in.Fault(point)
	}
}

// Intent is one journaled worktree.
type Intent struct {
	// Name is the worktree's name (the child's id).
	Name     string   `json:"name"`
	Worktree Worktree `json:"worktree"`
}

// Open is an intent being held by this process.
type Open struct {
	f    *os.File
	path string
	dir  string
}

// Begin writes the intent for wt (named name) durably: a temporary file,
// fsynced, renamed into place and the folder fsynced; the file stays open
// under an exclusive flock until End or Release. With no Dir it returns a
// nil *Open, which End and Release accept.
func (in Intents) Begin(name string, wt Worktree) (*Open, error) {
	if in.Dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(in.Dir, 0o700); err != nil {
		return nil, intentErr(err)
	}
	data, err := json.Marshal(Intent{Name: name, Worktree: wt})
	if err != nil {
		return nil, intentErr(err)
	}
	final := filepath.Join(in.Dir, name+".json")
	tmp, err := os.CreateTemp(in.Dir, "."+name+"-*.tmp")
	if err != nil {
		return nil, intentErr(err)
	}
	fail := func(err error) (*Open, error) {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, intentErr(err)
	}
	// Locked before it is visible under its real name: a sweep never
	// sees it unlocked while this process lives.
	if err := syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fail(err)
	}
	syncDir(in.Dir)
	return &Open{f: tmp, path: final, dir: in.Dir}, nil
}

// End removes the intent: what it journaled is finished (recorded by its
// child) or removed.
func (o *Open) End() {
	if o == nil || o.f == nil {
		return
	}
	_ = os.Remove(o.path)
	syncDir(o.dir)
	_ = o.f.Close()
	o.f = nil
}

// Sweep finishes or removes the worktrees of every intent no live process
// holds: recorded(name, wt) says whether a child recorded it durably (its
// worktree is then its own, shown by every listing: the intent just
// ends); otherwise the worktree and its branch are removed with g
// (unlocked first when git left it "locked initializing") and the intent
// ends. It returns the intents whose worktree it removed; an intent whose
// removal failed stays for the next sweep.
func (in Intents) Sweep(ctx context.Context, g Git, recorded func(name string, wt Worktree) bool) (removed []Intent, err error) {
	if in.Dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(in.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, intentErr(err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			// A temporary file of a Begin cut short (its intent never
			// named a worktree, and git did not run for it).
			if f, err := os.OpenFile(filepath.Join(in.Dir, name), os.O_RDWR, 0); err == nil {
				if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
					_ = os.Remove(f.Name())
				}
				_ = f.Close()
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") || ctx.Err() != nil {
			continue
		}
		path := filepath.Join(in.Dir, name)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			_ = f.Close() // held: another live process is making it
			continue
		}
		o := &Open{f: f, path: path, dir: in.Dir}
		var it Intent
		data, rerr := os.ReadFile(path)
		if rerr != nil || json.Unmarshal(data, &it) != nil || it.Name == "" || it.Worktree.Repo == "" || it.Worktree.Path == "" || !strings.HasPrefix(it.Worktree.Branch, BranchPrefix) {
			errs = append(errs, fmt.Errorf("worktree intent %s is unreadable; left for a person: %v", path, rerr))
			_ = f.Close()
			continue
		}
		if recorded(it.Name, it.Worktree) {
			o.End()
			continue
		}
		if err := g.Remove(ctx, it.Worktree); err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code == CodeUnsafeFolder {
				o.End() // nothing of ours can be there
				continue
			}
			if _, serr := os.Stat(it.Worktree.Repo); errors.Is(serr, os.ErrNotExist) {
				o.End() // the repository is gone, and its worktree with it
				continue
			}
			errs = append(errs, fmt.Errorf("remove the half-made worktree %s: %w", it.Worktree.Path, err))
			_ = f.Close()
			continue
		}
		removed = append(removed, it)
		o.End()
	}
	return removed, errors.Join(errs...)
}

func intentErr(err error) error {
	return &Error{Code: CodeGitFailed, Message: "worktree intent: " + err.Error(), Err: err}
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
