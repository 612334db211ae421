package persistence

// This file defines the repair of a session log with a bad line in the
// middle (a torn tail is cut by Load on its own): the whole file is kept
// in a .broken backup (backup.go), then the bad line alone is dropped when
// what follows it still continues the log, else the log is cut at it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNothingToRepair: the log has no bad line (a torn final line is not
// one: Load cuts it).
var ErrNothingToRepair = errors.New("persistence: the session log has no bad line")

// RepairPlan says what Repair will do to a corrupt log.
type RepairPlan struct {
	ID, Path string
	Line     int   // the bad line, 1-based
	Offset   int64 // where it starts
	Drop     bool  // only the bad line goes; else the log is cut at it
	Removed  int   // lines removed
	Kept     int   // events left in the log
	Cause    error // why the line is bad
}

// PlanRepair reads session id (without locking or changing it) and says
// how Repair would fix it. Errors: ErrNotFound, ErrNothingToRepair,
// *UnreadableError, and a *CorruptError of the header line (a log without
// a header cannot be repaired).
func (s *Store) PlanRepair(ctx context.Context, id string) (RepairPlan, error) {
	path, err := s.path(id)
	if err != nil {
		return RepairPlan{}, err
	}
	if err := ctx.Err(); err != nil {
		return RepairPlan{}, err
	}
	f, _, err := openRegular(id, path, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return RepairPlan{}, fmt.Errorf("persistence: repair %s: %w", id, ErrNotFound)
		}
		return RepairPlan{}, err
	}
	defer f.Close()
	data, err := readFile(f, -1)
	if err != nil {
		return RepairPlan{}, fmt.Errorf("persistence: read %s: %w", path, err)
	}
	p, _, err := planRepair(id, path, data)
	return p, err
}

// planRepair computes the plan and the repaired bytes.
func planRepair(id, path string, data []byte) (RepairPlan, []byte, error) {
	_, err := decodeLog(id, path, data)
	var ce *CorruptError
	switch {
	case err == nil:
		return RepairPlan{}, nil, fmt.Errorf("persistence: repair %s: %w", id, ErrNothingToRepair)
	case !errors.As(err, &ce):
		return RepairPlan{}, nil, err
	case ce.Line < 2 || ce.Offset < 0:
		return RepairPlan{}, nil, fmt.Errorf("persistence: repair %s: the header line is damaged, nothing to keep: %w", id, err)
	}
	p := RepairPlan{ID: id, Path: path, Line: ce.Line, Offset: ce.Offset, Cause: ce.Err}
	end := len(data)
	if i := bytes.IndexByte(data[ce.Offset:], '\n'); i >= 0 {
		end = int(ce.Offset) + i + 1
	}
	dropped := append(append([]byte(nil), data[:ce.Offset]...), data[end:]...)
	if v, err := decodeLog(id, path, dropped); err == nil {
		p.Drop, p.Removed, p.Kept = true, 1, len(v.events)
		return p, dropped, nil
	}
	cut := data[:ce.Offset]
	v, err := decodeLog(id, path, cut)
	if err != nil {
		return RepairPlan{}, nil, fmt.Errorf("persistence: repair %s: %w", id, err)
	}
	p.Removed = bytes.Count(data[ce.Offset:], []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		p.Removed++
	}
	p.Kept = len(v.events)
	return p, cut, nil
}

// Repair applies plan to session id: it takes the session's write lock
// (*LockedError if another writer holds it), checks the log still needs
// exactly that repair, keeps the whole file in a new .broken backup made
// durable first (a failed backup changes nothing: *BackupError), then
// drops the bad line or cuts the log at it and fsyncs. It returns the
// backup's path.
func (s *Store) Repair(ctx context.Context, id string, plan RepairPlan) (string, error) {
	path, err := s.path(id)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if h, err := s.held(id); err != nil || h != nil {
		if err == nil {
			err = &LockedError{ID: id, Path: path}
		}
		return "", err
	}
	f, _, err := openRegular(id, path, os.O_RDWR)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("persistence: repair %s: %w", id, ErrNotFound)
		}
		return "", err
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		if errors.Is(err, errWouldBlock) {
			return "", &LockedError{ID: id, Path: path}
		}
		return "", fmt.Errorf("persistence: lock %s: %w", path, err)
	}
	defer unlock(f)
	data, err := readFile(f, -1)
	if err != nil {
		return "", fmt.Errorf("persistence: read %s: %w", path, err)
	}
	now, fixed, err := planRepair(id, path, data)
	if err != nil {
		return "", err
	}
	if now.Line != plan.Line || now.Offset != plan.Offset || now.Drop != plan.Drop {
		return "", fmt.Errorf("persistence: repair %s: the log changed since the repair was planned", id)
	}
	backup, err := s.keepBackup(id, path, data)
	if err != nil {
		return "", err
	}
	if now.Drop {
		if _, err := f.WriteAt(fixed[now.Offset:], now.Offset); err != nil {
			return backup, fmt.Errorf("persistence: repair %s: %w (the original is in %s)", path, err, backup)
		}
	}
	if err := f.Truncate(int64(len(fixed))); err != nil {
		return backup, fmt.Errorf("persistence: repair %s: %w (the original is in %s)", path, err, backup)
	}
	if err := s.sync(f); err != nil {
		return backup, fmt.Errorf("persistence: fsync %s: %w (the original is in %s)", path, err, backup)
	}
	s.log.Warn("repaired session log", "session_id", id, "path", path, "line", now.Line, "dropped_line_only", now.Drop, "lines_removed", now.Removed, "backup", backup)
	return backup, nil
}

// InspectValid is Inspect for a log with a bad line in the middle: it
// returns the valid part before the bad line (with in-memory closers of a
// turn left open there) and the *CorruptError describing the bad line,
// without locking or changing anything. A log Inspect reads fine is
// returned with a nil corruption; other failures are Inspect's.
func (s *Store) InspectValid(ctx context.Context, id string) (Snapshot, *CorruptError, error) {
	snap, err := s.Inspect(ctx, id)
	var ce *CorruptError
	if err == nil || !errors.As(err, &ce) || ce.Line < 2 || ce.Offset < 0 {
		return snap, nil, err
	}
	path, err := s.path(id)
	if err != nil {
		return Snapshot{}, nil, err
	}
	f, _, err := openRegular(id, path, os.O_RDONLY)
	if err != nil {
		return Snapshot{}, nil, err
	}
	defer f.Close()
	data, err := readFile(f, ce.Offset)
	if err != nil {
		return Snapshot{}, nil, fmt.Errorf("persistence: read %s: %w", path, err)
	}
	snap, err = coldView(id, path, data)
	if err != nil {
		return Snapshot{}, nil, err
	}
	return snap, ce, nil
}
