package projcache

// This file defines the catalog index: one derived file per data directory
// holding, for every stored session, its header, the projection values of
// its last checkpoint, and the witness (log size, modification time, inode)
// under which both were observed. A listing reads it once, stats each log
// and trusts a row only while its witness still holds, so a cold child
// costs one stat instead of opening its log and its cache row.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// IndexFile is the index's name inside the projections directory.
const IndexFile = "catalog.idx"

// DefaultRacyWindow is how old a log's modification time must be before a
// reader may record a row for it (see Index.RacyWindow).
const DefaultRacyWindow = time.Second

// maxIndexFile is the size above which a commit point compacts the index
// instead of letting appends grow it.
const maxIndexFile = 8 << 20

// HeaderReader reads the header of one stored session (the first line of
// its log). It is the index's fallback for a row that fails its witness.
type HeaderReader func(ctx context.Context, id string) (session.Header, error)

// Indexed is one stored session as Scan returns it.
type Indexed struct {
	Header session.Header
	// Size is the log's size and ModTime its modification time (Unix
	// milliseconds), both from the stat of this scan.
	Size    int64
	ModTime int64
	// Values are checkpointed projection values valid for exactly Size
	// bytes of log, filtered to the registered unit versions; nil when the
	// index has none. Like Cache.Get, they are a hint, never an authority.
	Values map[string]json.RawMessage
}

// witness is what one stat says about a log file: a row observed under a
// witness is trusted only while a new stat gives the same one.
type witness struct {
	size, mtime int64 // bytes; nanoseconds
	ino         uint64
}

// indexRow is one record of the index file.
type indexRow struct {
	header    session.Header
	seen      witness
	unitsSize int64 // log size the units are valid for; -1 when none
	asOfSeq   int64
	units     []rowUnit // sorted by key
	// served memoizes the units filtered to one set of unit versions
	// (rows are shared by the scans of a loaded file, never modified).
	served atomic.Pointer[servedValues]
}

type servedValues struct {
	versions string
	values   map[string]json.RawMessage
}

// Index is the catalog index of one data directory. It is safe for
// concurrent use; it holds no open files and no goroutines.
type Index struct {
	path        string
	sessionsDir string
	cache       *Cache
	readHeader  HeaderReader
	// RacyWindow: a reader records a row it had to rebuild only if the
	// log was last modified at least this long before the scan began, so a
	// later same-size rewrite within one file-system timestamp tick cannot
	// hide behind an unchanged witness. Rows written at commit points (by
	// the session's lock holder, right after its own flush) need no wait.
	RacyWindow time.Duration

	mu sync.Mutex // serializes rewrites of the file by this process
	// loaded is the last parse of the file, reused while the file's own
	// witness is unchanged (it is only ever appended to or replaced).
	loaded atomic.Pointer[loadedIndex]
}

type loadedIndex struct {
	seen    witness
	rows    map[string]*indexRow
	records int
}

// Index returns the catalog index stored next to c's rows, over the
// session logs in sessionsDir (<dataDir>/sessions). Checkpoint updates it
// from then on. readHeader is the fallback for rows that fail validation.
func (c *Cache) Index(sessionsDir string, readHeader HeaderReader) *Index {
	x := &Index{path: filepath.Join(c.dir, IndexFile), sessionsDir: sessionsDir, cache: c, readHeader: readHeader, RacyWindow: DefaultRacyWindow}
	c.index.Store(x)
	return x
}

// Path returns the index file's path.
func (x *Index) Path() string { return x.path }

// Scan enumerates the stored sessions like persistence's List, in id
// order: one directory read, the index file, and one stat per session.
// A session whose row is missing, stale or damaged costs one header read
// (readHeader) and one cache row read, and the rebuilt row is written
// back, so the next scan is cheap. Sessions for which skip returns true
// (the caller has them live; skip may be called concurrently) get neither
// stat nor read and are left out. A session whose header cannot be read is
// left out, as List leaves it out. Only a failure to read the sessions
// directory (or ctx) is an error. The returned Values must not be modified.
func (x *Index) Scan(ctx context.Context, skip func(id string) bool) ([]Indexed, error) {
	began := time.Now()
	names, err := readNames(x.sessionsDir)
	if err != nil {
		return nil, fmt.Errorf("projcache: scan %s: %w", x.sessionsDir, err)
	}
	rows, records := x.load()
	versions := x.cache.proj.Versions()
	fingerprint := versionsKey(versions)
	out := make([]Indexed, 0, len(names))
	next := make(map[string]*indexRow, len(names))
	dirty := false
	stats := statAll(x.sessionsDir, names, skip)
	for i, id := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st := stats[i]
		if st.skipped {
			if r := rows[id]; r != nil {
				next[id] = r // kept as is: not validated, not served
			}
			continue
		}
		w := st.w
		if st.err != nil || !st.regular {
			continue // vanished, unreadable or not a file: List skips it too
		}
		r := rows[id]
		if r == nil || r.seen != w {
			r = x.rebuild(ctx, id, w)
			if r == nil {
				continue
			}
			if w.mtime <= began.Add(-x.RacyWindow).UnixNano() {
				next[id] = r
				dirty = true
			}
		} else {
			next[id] = r
		}
		e := Indexed{Header: r.header, Size: w.size, ModTime: w.mtime / int64(time.Millisecond)}
		if r.unitsSize == w.size {
			e.Values = r.values(versions, fingerprint)
		}
		out = append(out, e)
	}
	// Rows of deleted sessions disappear; superseded records are dropped.
	if dirty || len(next) != len(rows) || records > 2*len(next)+16 {
		x.rewrite(next)
	}
	return out, nil
}

// logStat is the stat of one log in a scan.
type logStat struct {
	w       witness
	regular bool
	skipped bool
	err     error
}

// statParallelism bounds the goroutines that stat the logs of one scan
// (stat calls are independent; on a large directory they dominate).
const statParallelism = 4

// statAll stats the log of every id for which skip is false.
func statAll(dir string, ids []string, skip func(string) bool) []logStat {
	return statAllIn(dir, ids, skip, true)
}

// statAllIn is statAll; relative (the default) stats relative to the
// directory (see statLogAt), else by full path (the benchmark's baseline).
func statAllIn(dir string, ids []string, skip func(string) bool, relative bool) []logStat {
	out := make([]logStat, len(ids))
	var d *os.File
	if relative {
		if f, err := os.Open(dir); err == nil {
			d = f
			defer f.Close()
		}
	}
	work := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if skip != nil && skip(ids[i]) {
				out[i].skipped = true
				continue
			}
			st := &out[i]
			st.w, st.regular, st.err = statLogAt(d, dir, ids[i]+".jsonl")
		}
	}
	workers := min(statParallelism, len(ids)/128)
	if workers <= 1 {
		work(0, len(ids))
		return out
	}
	var wg sync.WaitGroup
	per := (len(ids) + workers - 1) / workers
	for lo := 0; lo < len(ids); lo += per {
		wg.Go(func() { work(lo, min(lo+per, len(ids))) })
	}
	wg.Wait()
	return out
}

// rebuild reads the header of id and its cache row, making a fresh row
// observed under w; nil when the header is unreadable.
func (x *Index) rebuild(ctx context.Context, id string, w witness) *indexRow {
	h, err := x.readHeader(ctx, id)
	if err != nil || h.ID != id {
		return nil
	}
	r := &indexRow{header: h, seen: w, unitsSize: -1}
	if row, ok := x.cache.row(id); ok && row.CreatedAt == h.CreatedAt && row.Size == w.size {
		r.unitsSize, r.asOfSeq, r.units = row.Size, row.AsOfSeq, sortedUnits(row.Units)
	}
	return r
}

// record appends the row of a checkpoint to the index. It is called by
// Checkpoint after the row file is written: the log has been flushed by
// the session's holder and has exactly row.Size bytes, unless a write
// followed, in which case there is nothing to record yet.
func (x *Index) record(h session.Header, row Row) error {
	w, regular, err := statLog(filepath.Join(x.sessionsDir, h.ID+".jsonl"))
	if err != nil || !regular || w.size != row.Size {
		return err
	}
	rec := encodeRow(nil, &indexRow{header: h, seen: w, unitsSize: row.Size, asOfSeq: row.AsOfSeq, units: sortedUnits(row.Units)})
	f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("projcache: index: %w", err)
	}
	// One write call: concurrent appenders (other processes) never
	// interleave inside a record.
	_, werr := f.Write(rec)
	st, serr := f.Stat()
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("projcache: index: %w", err)
	}
	if serr == nil && st.Size() > maxIndexFile {
		rows, _ := x.load()
		x.rewrite(rows)
	}
	return nil
}

// load returns the index file's last row per id and its record count. A
// missing or damaged file yields what could be read before the damage:
// every row lost only costs a rebuild. The returned map is shared: read
// it, never modify it.
func (x *Index) load() (map[string]*indexRow, int) {
	w, _, err := statLog(x.path)
	if err != nil || w.size == 0 {
		return map[string]*indexRow{}, 0
	}
	if l := x.loaded.Load(); l != nil && l.seen == w {
		return l.rows, l.records
	}
	data, err := readNoFollow(x.path)
	if err != nil {
		return map[string]*indexRow{}, 0
	}
	rows, n := parseIndex(data)
	// Remembered only if the file did not change while it was read.
	if again, _, err := statLog(x.path); err == nil && again == w && int64(len(data)) == w.size {
		x.loaded.Store(&loadedIndex{seen: w, rows: rows, records: n})
	}
	return rows, n
}

// parseIndex parses the records of an index file.
func parseIndex(data []byte) (map[string]*indexRow, int) {
	rows := make(map[string]*indexRow)
	n := 0
	in := interner{}
	for len(data) > 0 {
		r, rest, ok := decodeRow(data, in)
		if !ok {
			break
		}
		rows[r.header.ID] = r
		n++
		data = rest
	}
	return rows, n
}

// rewrite replaces the index file with rows, atomically. Appends by other
// processes between our read and the rename are lost: they are rebuilt.
func (x *Index) rewrite(rows map[string]*indexRow) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var buf []byte
	for _, id := range ids {
		buf = encodeRow(buf, rows[id])
	}
	tmp, err := os.CreateTemp(filepath.Dir(x.path), "."+IndexFile+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(buf)
	if errors.Join(werr, tmp.Close()) != nil || os.Rename(tmp.Name(), x.path) != nil {
		os.Remove(tmp.Name())
	}
}

// readNames returns the ids of the session logs in dir, sorted.
func readNames(dir string) ([]string, error) {
	// Readdirnames, not os.ReadDir: no DirEntry per file, and sorting the
	// kept ids is cheaper than sorting entries (this is the listing's
	// per-child floor, next to one stat).
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	ids := names[:0]
	for _, name := range names {
		if id, ok := strings.CutSuffix(name, ".jsonl"); ok && session.ValidateID(id) == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// values returns the row's units filtered to versions (whose
// versionsKey is fingerprint), memoized.
func (r *indexRow) values(versions map[string]int, fingerprint string) map[string]json.RawMessage {
	if m := r.served.Load(); m != nil && m.versions == fingerprint {
		return m.values
	}
	v := currentValues(r.units, versions)
	r.served.Store(&servedValues{versions: fingerprint, values: v})
	return v
}

// versionsKey renders unit versions as one comparable string.
func versionsKey(versions map[string]int) string {
	keys := make([]string, 0, len(versions))
	for k := range versions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d;", k, versions[k])
	}
	return b.String()
}

// rowUnit is one unit's view in an index row. A row holds a slice of
// them sorted by key, not a map: a listing decodes every row, and one
// small slice per row costs less than a map.
type rowUnit struct {
	key string
	UnitValue
}

// sortedUnits returns units as a slice sorted by key.
func sortedUnits(units map[string]UnitValue) []rowUnit {
	if len(units) == 0 {
		return nil
	}
	out := make([]rowUnit, 0, len(units))
	for k, u := range units {
		out = append(out, rowUnit{key: k, UnitValue: u})
	}
	slices.SortFunc(out, func(a, b rowUnit) int { return strings.Compare(a.key, b.key) })
	return out
}

// currentValues keeps the units whose stateVersion is the registered one.
func currentValues(units []rowUnit, versions map[string]int) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for _, u := range units {
		if v, ok := versions[u.key]; !ok || v != u.StateVersion || len(bytes.TrimSpace(u.Value)) == 0 {
			continue
		}
		if out == nil {
			out = make(map[string]json.RawMessage, len(units))
		}
		out[u.key] = u.Value
	}
	return out
}

// Record layout (all integers varints, strings length-prefixed):
//
//	uvarint payloadLen | payload | crc32c(payload) (4 bytes, little endian)
//	payload: formatVersion, id, version, createdAt, cwd, parentSession,
//	         seedLength, origin, delegationDepth, size, mtime, ino,
//	         unitsSize, asOfSeq, nUnits, {key, stateVersion, value}...
//
// A record that fails its checksum, or a truncated one, ends the parse.
const indexFormat = 1

// maxRecord bounds one record, so a damaged length cannot allocate much.
const maxRecord = 1 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func encodeRow(buf []byte, r *indexRow) []byte {
	var p []byte
	p = binary.AppendUvarint(p, indexFormat)
	h := r.header
	p = appendString(p, h.ID)
	p = binary.AppendVarint(p, int64(h.Version))
	p = binary.AppendVarint(p, h.CreatedAt)
	p = appendString(p, h.Cwd)
	p = appendString(p, h.ParentSession)
	p = binary.AppendVarint(p, int64(h.SeedLength))
	p = appendString(p, h.Origin)
	p = binary.AppendVarint(p, int64(h.DelegationDepth))
	p = binary.AppendVarint(p, r.seen.size)
	p = binary.AppendVarint(p, r.seen.mtime)
	p = binary.AppendUvarint(p, r.seen.ino)
	p = binary.AppendVarint(p, r.unitsSize)
	p = binary.AppendVarint(p, r.asOfSeq)
	p = binary.AppendUvarint(p, uint64(len(r.units)))
	for _, u := range r.units { // sorted by key
		p = appendString(p, u.key)
		p = binary.AppendVarint(p, int64(u.StateVersion))
		p = appendString(p, string(u.Value))
	}
	buf = binary.AppendUvarint(buf, uint64(len(p)))
	buf = append(buf, p...)
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(p, crcTable))
}

func appendString(p []byte, s string) []byte {
	return append(binary.AppendUvarint(p, uint64(len(s))), s...)
}

// interner shares the strings that repeat across rows (parents, working
// directories, unit keys): a listing decodes every row.
type interner map[string]string

func (in interner) str(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// decodeRow parses the record at the start of data. Unit values alias
// data.
func decodeRow(data []byte, in interner) (*indexRow, []byte, bool) {
	n, k := binary.Uvarint(data)
	if k <= 0 || n > maxRecord || uint64(len(data)-k) < n+4 {
		return nil, nil, false
	}
	p := data[k : k+int(n)]
	rest := data[k+int(n)+4:]
	if binary.LittleEndian.Uint32(data[k+int(n):]) != crc32.Checksum(p, crcTable) {
		return nil, nil, false
	}
	d := decoder{b: p, in: in}
	if d.uvarint() != indexFormat {
		return nil, nil, false
	}
	r := &indexRow{}
	h := &r.header
	h.ID = d.str()
	h.Version = int(d.varint())
	h.CreatedAt = d.varint()
	h.Cwd = d.shared()
	h.ParentSession = d.shared()
	h.SeedLength = int(d.varint())
	h.Origin = d.shared()
	h.DelegationDepth = int(d.varint())
	r.seen.size = d.varint()
	r.seen.mtime = d.varint()
	r.seen.ino = d.uvarint()
	r.unitsSize = d.varint()
	r.asOfSeq = d.varint()
	nu := d.uvarint()
	if nu > uint64(len(p)) {
		return nil, nil, false
	}
	if nu > 0 {
		r.units = make([]rowUnit, 0, nu) // written sorted by key
	}
	for range nu {
		key := d.shared()
		ver := int(d.varint())
		val := d.bytes()
		r.units = append(r.units, rowUnit{key: key, UnitValue: UnitValue{StateVersion: ver, Value: json.RawMessage(val)}})
	}
	if d.bad || len(d.b) != 0 || session.ValidateID(h.ID) != nil {
		return nil, nil, false
	}
	return r, rest, true
}

// decoder reads varints and strings, remembering the first failure.
type decoder struct {
	b   []byte
	bad bool
	in  interner
}

// advance consumes k bytes read by a binary varint decoder (k <= 0: the
// read failed) and reports whether it succeeded.
func (d *decoder) advance(k int) bool {
	if k <= 0 {
		d.bad, d.b = true, nil
		return false
	}
	d.b = d.b[k:]
	return true
}

func (d *decoder) uvarint() uint64 {
	v, k := binary.Uvarint(d.b)
	if !d.advance(k) {
		return 0
	}
	return v
}

func (d *decoder) varint() int64 {
	v, k := binary.Varint(d.b)
	if !d.advance(k) {
		return 0
	}
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) str() string { return string(d.bytes()) }

func (d *decoder) shared() string { return d.in.str(d.bytes()) }

// forget drops the row of id (its cache row was removed).
func (x *Index) forget(id string) {
	rows, _ := x.load()
	if _, ok := rows[id]; !ok {
		return
	}
	keep := make(map[string]*indexRow, len(rows))
	for k, r := range rows {
		if k != id {
			keep[k] = r
		}
	}
	x.rewrite(keep)
}
