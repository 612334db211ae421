package persistence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// DefaultFlushInterval is Run's period when Options.FlushInterval is 0.
const DefaultFlushInterval = 200 * time.Millisecond

// Options configure a Store. The zero value is usable.
type Options struct {
	// Logger receives warnings (skipped files, repairs, release failures).
	// Nil means slog.Default().
	Logger *slog.Logger
	// FlushInterval is how often Run writes buffered events.
	FlushInterval time.Duration
	// NoSync skips every fsync. Unsafe: for tests and benchmarks only.
	NoSync bool
	// GroupWindow and GroupBytes bound the group commit of SyncSoon: at
	// most one fsync per window unless this many bytes are buffered. Zero
	// means DefaultGroupWindow and DefaultGroupBytes.
	GroupWindow time.Duration
	GroupBytes  int
	// Fault, when set, is called at each storage step (see FaultPoint) on
	// the goroutine taking it; crash tests kill the process there. Nil in
	// production.
	Fault func(FaultPoint)
	// FaultErr, when set, can fail a step: a non-nil error returned at
	// FaultBackup fails the backup, at FaultWrite the batch's write, at
	// a repair step (FaultRepair...) that step, at FaultReadBack the
	// read-back of evicted events, as if the disk had (an injected ENOSPC
	// or EIO; fault tests). Nil in production.
	FaultErr func(FaultPoint) error
}

// FaultPoint names a storage step where Options.Fault is called.
type FaultPoint string

// Storage steps, in the order a session's data reaches the disk.
const (
	FaultAppend  FaultPoint = "append"  // an event was buffered (under the append lock)
	FaultWrite   FaultPoint = "write"   // before a batch is written
	FaultFsync   FaultPoint = "fsync"   // written, before the fsync
	FaultPublish FaultPoint = "publish" // a new file is complete, before it gets its name
	// FaultReadBack is a read-back of a held session's evicted events
	// (ReadEvents), before its file is read.
	FaultReadBack FaultPoint = "read-back"
)

// Store is the durable JSONL session store rooted at one data directory.
// It is safe for concurrent use. It owns the open files and locks of the
// sessions it holds for writing; Release gives one back, Close all.
type Store struct {
	dir      string   // <dataDir>/sessions
	dirFile  *os.File // the sessions directory, kept open to fsync it
	log      *slog.Logger
	interval time.Duration
	noSync   bool
	fault    func(FaultPoint)
	faultErr func(FaultPoint) error

	groupWindow time.Duration
	groupBytes  int

	mu      sync.RWMutex // guards the fields below
	handles map[string]*handle
	// failed remembers the write failure of sessions released with events
	// that could not be written, so a later wait on them fails instead of
	// finding nothing held (and so nothing to wait for). Holding the
	// session again (Load, Open) forgets it: the new holder starts from the
	// file.
	failed map[string]error
	closed bool
}

// Snapshot is a validated view of one session log.
type Snapshot struct {
	Header session.Header
	// Events are the valid stored prefix, followed by Synthetic closers of
	// an interrupted final turn (cold reads only) or by events buffered but
	// not yet written (sessions this Store holds for writing).
	Events []session.Event
	// Size is the byte length of the valid stored prefix. Inspect: the
	// file size less a torn tail (buffered events of a held session are
	// not counted). Load: the file size after the repair and the closers.
	Size int64
	// Torn reports that the file ended in a torn line, which was ignored
	// (Inspect) or cut off (Load).
	Torn bool
	// Synthetic counts the recovery closers at the end of Events.
	Synthetic int
}

// Entry is one row of List: a stored session's header and file facts.
type Entry struct {
	Header  session.Header
	Size    int64 // file size in bytes
	ModTime int64 // last modification, epoch ms
}

// Open opens (creating it if needed) the store rooted at dir. Session logs
// live in dir/sessions; directories are created 0700.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("persistence: empty data directory")
	}
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return nil, fmt.Errorf("persistence: create %s: %w", sdir, err)
	}
	df, err := os.Open(sdir)
	if err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", sdir, err)
	}
	s := &Store{
		dir:      sdir,
		dirFile:  df,
		log:      opts.Logger,
		interval: opts.FlushInterval,
		noSync:   opts.NoSync,
		fault:    opts.Fault,
		faultErr: opts.FaultErr,
		handles:  make(map[string]*handle),
		failed:   make(map[string]error),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.interval <= 0 {
		s.interval = DefaultFlushInterval
	}
	s.groupWindow, s.groupBytes = opts.GroupWindow, opts.GroupBytes
	if s.groupWindow <= 0 {
		s.groupWindow = DefaultGroupWindow
	}
	if s.groupBytes <= 0 {
		s.groupBytes = DefaultGroupBytes
	}
	s.removeTempLeftovers()
	return s, nil
}

// DefaultDir returns the default data directory: $XDG_STATE_HOME/acp-agent,
// else ~/.local/state/acp-agent, with ~ from HomeDir. A relative
// XDG_STATE_HOME is ignored, as the XDG base directory specification
// requires.
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "acp-agent"), nil
	}
	home, err := HomeDir(os.Getenv)
	if err != nil {
		return "", fmt.Errorf("persistence: no default data directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "acp-agent"), nil
}

// ErrNoHome is HomeDir's failure: neither $HOME nor the user database
// names a home directory. Its message says what to set.
var ErrNoHome = errors.New("HOME is not set and the user database has no home directory for this user: set HOME (or XDG_STATE_HOME)")

// HomeDir is the user's home directory: $HOME, else the one the user
// database records for the current user (editors such as avante.nvim may
// start the agent with an empty environment).
func HomeDir(getenv func(string) string) (string, error) {
	return homeDir(getenv, user.Current)
}

// homeDir is HomeDir with the user database's lookup injected (tests).
func homeDir(getenv func(string) string, current func() (*user.User, error)) (string, error) {
	if h := getenv("HOME"); h != "" {
		return h, nil
	}
	if u, err := current(); err == nil && u.HomeDir != "" && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir, nil
	}
	return "", ErrNoHome
}

// WithHome returns getenv with HOME, when unset, answered by HomeDir: the
// settings, instructions and agent definition files under ~ are then found
// as the data directory is.
func WithHome(getenv func(string) string) func(string) string {
	return func(key string) string {
		v := getenv(key)
		if key == "HOME" && v == "" {
			v, _ = HomeDir(getenv)
		}
		return v
	}
}

// Dir returns the directory holding the session files.
func (s *Store) Dir() string { return s.dir }

// path validates id and returns its session file.
func (s *Store) path(id string) (string, error) {
	if err := session.ValidateID(id); err != nil {
		return "", fmt.Errorf("persistence: %w", err)
	}
	return filepath.Join(s.dir, id+".jsonl"), nil
}

// held returns the handle of a session this Store holds for writing.
func (s *Store) held(id string) (*handle, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.handles[id], nil
}

// heldOrFailed is held for the wait points (SyncTo, SyncSoon, Flush): a
// session not held but released after a write failure answers that
// failure, so whoever waits to show one of its events does not show it.
func (s *Store) heldOrFailed(id string) (*handle, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if h := s.handles[id]; h != nil {
		return h, nil
	}
	return nil, s.failed[id]
}

// Err returns the sticky write failure of session id: a *WriteError once
// a write, fsync or release of it failed (nothing more of it is written;
// hold it again to start over from its file), else nil.
func (s *Store) Err(id string) error {
	h, err := s.heldOrFailed(id)
	if h == nil {
		if errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// checkOpen fails with ErrClosed after Close.
func (s *Store) checkOpen() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// register publishes h as held; it fails if the Store closed meanwhile
// (the caller then releases h).
func (s *Store) register(h *handle) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.handles[h.id] != nil {
		return fmt.Errorf("persistence: session %s: %w (already held by this store)", h.id, ErrExists)
	}
	s.handles[h.id] = h
	delete(s.failed, h.id)
	return nil
}

func (s *Store) syncDir() error {
	if s.noSync {
		return nil
	}
	return s.dirFile.Sync()
}

// hit runs the fault hook at p, if any.
func (s *Store) hit(p FaultPoint) {
	if s.fault != nil {
		s.fault(p)
	}
}

func (s *Store) sync(f *os.File) error {
	s.hit(FaultFsync)
	if s.noSync {
		return nil
	}
	return f.Sync()
}

// Close flushes and releases every held session and closes the store.
// Later calls return nil; other methods return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	// Marking closed first makes a racing Load or create fail to register
	// (it then releases its own handle), so the set below is final.
	s.closed = true
	hs := make([]*handle, 0, len(s.handles))
	for _, h := range s.handles {
		hs = append(hs, h)
	}
	s.mu.Unlock()
	var errs []error
	for _, h := range hs {
		errs = append(errs, s.release(h))
	}
	errs = append(errs, s.dirFile.Close())
	return errors.Join(errs...)
}

// Inspect returns the validated view of session id without changing
// anything on disk. For a session this Store holds for writing it is the
// in-memory view (stored events plus buffered ones; it may end inside a
// live turn). Otherwise it is the valid stored prefix, a torn final line
// ignored (Torn), followed by in-memory synthetic closers if the log ends
// inside a turn (Synthetic). Errors: ErrNotFound (wrapped),
// session.ErrInvalidID, *CorruptError.
func (s *Store) Inspect(ctx context.Context, id string) (Snapshot, error) {
	path, err := s.path(id)
	if err != nil {
		return Snapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	h, err := s.held(id)
	if err != nil {
		return Snapshot{}, err
	}
	if h != nil {
		if snap, ok, err := s.heldView(h); ok {
			return snap, err
		}
		// Released meanwhile: the file is complete; read it cold.
	}
	f, _, err := openRegular(id, path, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Snapshot{}, fmt.Errorf("persistence: inspect %s: %w", id, ErrNotFound)
		}
		return Snapshot{}, fmt.Errorf("persistence: inspect %s: %w", id, err)
	}
	defer f.Close()
	data, err := readFile(f, -1)
	if err != nil {
		return Snapshot{}, fmt.Errorf("persistence: read %s: %w", path, err)
	}
	return coldView(id, path, data)
}

// coldView decodes the bytes of a session file that no live writer of this
// Store feeds, adding the closing events of an interrupted final turn (repair).
func coldView(id, path string, data []byte) (Snapshot, error) {
	v, err := decodeLog(id, path, data)
	if err != nil {
		return Snapshot{}, err
	}
	cl, err := repair(id, path, v)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{
		Header:    v.header,
		Events:    append(v.events, cl...),
		Size:      v.good,
		Torn:      v.torn,
		Synthetic: len(cl),
	}, nil
}

// heldView is the in-memory view of a held session: the file up to the
// bytes known written, then the events in flight and buffered. ok is false
// if h was released meanwhile.
func (s *Store) heldView(h *handle) (snap Snapshot, ok bool, err error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return Snapshot{}, false, nil
	}
	written := h.written
	mem := make([]session.Event, 0, len(h.inflight)+len(h.pending))
	mem = append(append(mem, h.inflight...), h.pending...)
	h.mu.Unlock()
	// Bytes below written never change while the file is held: writes only
	// append, and repair happens before a handle is published. ReadAt is
	// safe next to a concurrent append on the same file.
	data, rerr := readFile(h.f, written)
	if rerr != nil {
		h.mu.Lock()
		released := h.closed
		h.mu.Unlock()
		if released {
			return Snapshot{}, false, nil
		}
		return Snapshot{}, true, fmt.Errorf("persistence: read %s: %w", h.path, rerr)
	}
	v, derr := decodeLog(h.id, h.path, data)
	if derr != nil {
		return Snapshot{}, true, derr
	}
	return Snapshot{Header: v.header, Events: append(v.events, mem...), Size: v.good, Torn: v.torn}, true, nil
}
