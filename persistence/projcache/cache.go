package projcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Projector is what the cache needs from the projection registry.
type Projector interface {
	// Versions returns the stateVersion of every registered unit by key.
	Versions() map[string]int
	// LiveValues returns the current projection values of a live session,
	// the seq they are as of, and the stateVersion of each returned unit.
	LiveValues(s *session.Session) (asOfSeq int64, values map[string]json.RawMessage, versions map[string]int, err error)
}

// Row is one stored checkpoint.
type Row struct {
	ID        string               `json:"id"`
	CreatedAt int64                `json:"createdAt"`
	Size      int64                `json:"size"`
	AsOfSeq   int64                `json:"asOfSeq"`
	Units     map[string]UnitValue `json:"units"`
}

// UnitValue is one unit's checkpointed view.
type UnitValue struct {
	StateVersion int             `json:"stateVersion"`
	Value        json.RawMessage `json:"value"`
}

// Cache is the projection cache rooted at <dataDir>/projections.
type Cache struct {
	dir   string
	proj  Projector
	index atomic.Pointer[Index] // set by Index; updated by Checkpoint
}

// Open returns the cache of dataDir, creating its directory.
func Open(dataDir string, proj Projector) (*Cache, error) {
	if proj == nil {
		return nil, errors.New("projcache: nil projector")
	}
	dir := filepath.Join(dataDir, "projections")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("projcache: %w", err)
	}
	removeTempLeftovers(dir, time.Now())
	return &Cache{dir: dir, proj: proj}, nil
}

// Dir returns the directory holding the rows.
func (c *Cache) Dir() string { return c.dir }

func (c *Cache) path(id string) (string, error) {
	if err := session.ValidateID(id); err != nil {
		return "", err
	}
	return filepath.Join(c.dir, id+".json"), nil
}

// row reads the stored row of id; ok is false for a missing or garbage
// row.
func (c *Cache) row(id string) (row Row, ok bool) {
	p, err := c.path(id)
	if err != nil {
		return Row{}, false
	}
	data, err := readNoFollow(p)
	if err != nil || json.Unmarshal(data, &row) != nil || row.ID != id {
		return Row{}, false
	}
	return row, true
}

// Get returns the checkpointed values of the session with header h whose
// log currently has size bytes, keeping only units whose stateVersion is
// still the registered one. A miss (no row, garbage, another lifecycle of
// the id, a different size, no current unit) is (nil, nil). Only an I/O
// failure other than a missing file is an error.
func (c *Cache) Get(h session.Header, size int64) (map[string]json.RawMessage, error) {
	p, err := c.path(h.ID)
	if err != nil {
		return nil, nil
	}
	data, err := readNoFollow(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EINVAL) {
			return nil, nil // a symlink or special file is no row: a miss, replaced by the next Put
		}
		return nil, fmt.Errorf("projcache: %w", err)
	}
	var row Row
	if err := json.Unmarshal(data, &row); err != nil {
		return nil, nil
	}
	if row.ID != h.ID || row.CreatedAt != h.CreatedAt || row.Size != size || size < 0 {
		return nil, nil
	}
	versions := c.proj.Versions()
	var out map[string]json.RawMessage
	for key, u := range row.Units {
		v, ok := versions[key]
		if !ok || v != u.StateVersion || len(bytes.TrimSpace(u.Value)) == 0 {
			continue
		}
		if out == nil {
			out = make(map[string]json.RawMessage, len(row.Units))
		}
		out[key] = u.Value
	}
	return out, nil
}

// Put stores row atomically, replacing any previous row of its id.
func (c *Cache) Put(row Row) error {
	p, err := c.path(row.ID)
	if err != nil {
		return fmt.Errorf("projcache: %w", err)
	}
	data, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("projcache: encode row %s: %w", row.ID, err)
	}
	tmp, err := os.CreateTemp(c.dir, "."+row.ID+".*.tmp")
	if err != nil {
		return fmt.Errorf("projcache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("projcache: write row %s: %w", row.ID, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("projcache: %w", err)
	}
	return nil
}

// Remove deletes the row of id, if any.
func (c *Cache) Remove(id string) error {
	p, err := c.path(id)
	if err != nil {
		return fmt.Errorf("projcache: %w", err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("projcache: %w", err)
	}
	if x := c.index.Load(); x != nil {
		x.forget(id)
	}
	return nil
}

// Checkpoint writes the row of live session s after its log was made
// durable: storedNextSeq is the number of events now on disk and storedSize
// the log file's size. The row is written only when the live projection is
// exactly as of the stored log (asOfSeq == storedNextSeq-1); otherwise, or
// when a unit failed on this log, nothing is written and the next
// checkpoint catches up. It reports whether a row was written. Call it after
// each flush at turn end, at child disposal and on shutdown.
func (c *Cache) Checkpoint(ctx context.Context, s *session.Session, storedNextSeq, storedSize int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	asOf, values, versions, err := c.proj.LiveValues(s)
	if err != nil {
		return false, fmt.Errorf("projcache: session %s: %w", s.ID(), err)
	}
	if asOf != storedNextSeq-1 {
		return false, nil
	}
	h := s.Header()
	row := Row{ID: h.ID, CreatedAt: h.CreatedAt, Size: storedSize, AsOfSeq: asOf, Units: make(map[string]UnitValue, len(values))}
	for key, v := range values {
		row.Units[key] = UnitValue{StateVersion: versions[key], Value: v}
	}
	if err := c.Put(row); err != nil {
		return false, err
	}
	if x := c.index.Load(); x != nil {
		if err := x.record(h, row); err != nil {
			return true, err
		}
	}
	return true, nil
}
