package persistence

// This file defines the repair of a session log with bad lines in the
// middle (a torn tail is cut by Load on its own). Each undecodable line
// is dropped on its own and every valid event after it is kept, byte for
// byte and with its own seq; a seq left without an event gets a
// session/repaired filler, and a session/repaired summary at the end
// lists the dropped lines, so the log is valid again and says it was
// repaired. The whole old file is kept in a .broken backup. Both files
// are written under temporary names, fsynced and renamed into place (the
// directory fsynced), so a kill at any step leaves the old log or the new
// one, and a backup under its real name is always whole.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Fault points of a repair (Options.Fault / FaultErr), in order.
const (
	FaultRepairBackup      FaultPoint = "repair-backup"       // backup written to its temp file, before fsync
	FaultRepairBackupNamed FaultPoint = "repair-backup-named" // backup linked to its real name, temp not yet removed
	FaultRepairLog         FaultPoint = "repair-log"          // new log written to its temp file, before fsync
	FaultRepairRename      FaultPoint = "repair-rename"       // new log durable, before the rename
	FaultRepairRenamed     FaultPoint = "repair-renamed"      // renamed, before the directory fsync
)

// ErrNothingToRepair: the log has no bad line (a torn final line is not
// one: Load cuts it).
var ErrNothingToRepair = errors.New("persistence: the session log has no bad line")

// maxTailGap bounds the seqs a final event may skip and still be taken
// for a real gap (lines lost) rather than a damaged seq field.
const maxTailGap = 1 << 10

// RepairPlan says what Repair will do to a damaged log.
type RepairPlan struct {
	ID, Path string
	Line     int   // the first bad line, 1-based
	Offset   int64 // where it starts
	Cause    error // why it is bad
	// Dropped are the lines the repair removes, each on its own.
	Dropped []session.DroppedLine
	Kept    int // valid events kept: all of them
	Fillers int // missing seqs held by a session/repaired filler
	// Drop is true: only the bad lines go (kept for callers of the old
	// plan); Removed is len(Dropped).
	Drop    bool
	Removed int

	fixed repairOut // the repaired log, rendered by Repair
}

// repairOut is an analysed log: the header line and, in order, the lines
// kept verbatim and the fillers.
type repairOut struct {
	header []byte
	items  []repairItem
	next   int64 // seq of the summary
	time   int64 // time of the last kept event
}

type repairItem struct {
	raw    []byte // a kept line (without newline); nil for a filler
	filler session.Event
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
	return planRepair(id, path, data)
}

// candidate is one decodable line (or the decodable tail of a torn one).
type candidate struct {
	line int
	off  int64
	raw  []byte
	ev   session.Event
}

// planRepair analyses data: every line that decodes to a valid event is a
// candidate; the others are dropped. A candidate whose seq repeats one
// kept is dropped; one that skips seqs is a real gap (fillers) when the
// next candidate continues from it, else its seq is damaged (dropped).
// It is long because it is one pass over the candidates whose keep,
// fill and drop decisions depend on the ones before (the last kept seq);
// the pass reads as the rules above, in their order.
func planRepair(id, path string, data []byte) (RepairPlan, error) {
	_, err := decodeLog(id, path, data)
	var ce *CorruptError
	switch {
	case err == nil:
		return RepairPlan{}, fmt.Errorf("persistence: repair %s: %w", id, ErrNothingToRepair)
	case !errors.As(err, &ce):
		return RepairPlan{}, err
	case ce.Line < 2 || ce.Offset < 0:
		return RepairPlan{}, fmt.Errorf("persistence: repair %s: the header line is damaged, nothing to keep: %w", id, err)
	}
	p := RepairPlan{ID: id, Path: path, Line: ce.Line, Offset: ce.Offset, Cause: ce.Err, Drop: true}
	nl := bytes.IndexByte(data, '\n')
	out := repairOut{header: data[:nl+1]}
	var first []session.DroppedLine // dropped because they do not decode
	drop := func(line int, off int64, n int, why string) {
		first = append(first, session.DroppedLine{Line: line, Offset: off, Bytes: n, Reason: why})
	}
	var cands []candidate
	off := nl + 1
	for line := 2; off < len(data); line++ {
		rest := data[off:]
		end := bytes.IndexByte(rest, '\n')
		raw := rest
		if end >= 0 {
			raw = rest[:end]
		}
		if end < 0 {
			drop(line, int64(off), len(raw), "torn final line (a write cut short)")
			break
		}
		if ev, err := validLine(raw); err == nil {
			cands = append(cands, candidate{line: line, off: int64(off), raw: raw, ev: ev})
		} else if i, ev, ok := salvage(raw); ok {
			// A torn line run into the next record: the tail is whole.
			drop(line, int64(off), i, "torn line (a write cut short, run into the next record)")
			cands = append(cands, candidate{line: line, off: int64(off + i), raw: raw[i:], ev: ev})
		} else {
			drop(line, int64(off), len(raw), err.Error())
		}
		off += end + 1
	}
	var pendingDrops []session.DroppedLine // dropped since the last kept event
	p.Dropped = first
	mark := 0
	seqDrop := func(c candidate, why string) {
		d := session.DroppedLine{Line: c.line, Offset: c.off, Bytes: len(c.raw), Reason: why}
		p.Dropped = append(p.Dropped, d)
		pendingDrops = append(pendingDrops, d)
	}
	for k, c := range cands {
		// Lines dropped before this candidate belong to the gap before it.
		for mark < len(first) && first[mark].Offset < c.off {
			pendingDrops = append(pendingDrops, first[mark])
			mark++
		}
		s, want := c.ev.Seq, out.next
		if s < want {
			seqDrop(c, fmt.Sprintf("repeats seq %d (the log is at %d)", s, want))
			continue
		}
		if s > want {
			// A real gap, not a damaged seq field: the lines dropped since
			// the last kept event can have held the seqs it skips, or the
			// next event continues from it, or it is the last one.
			gap := s-want <= int64(len(pendingDrops)) ||
				(k+1 < len(cands) && cands[k+1].ev.Seq == s+1) || (k+1 == len(cands) && s-want <= maxTailGap)
			if !gap {
				seqDrop(c, fmt.Sprintf("has seq %d where %d belongs (a damaged seq)", s, want))
				continue
			}
			for seq := want; seq < s; seq++ {
				d := session.RepairedData{Dropped: pendingDrops, Filler: true}
				if d.Dropped == nil {
					d.Dropped = []session.DroppedLine{}
				}
				pendingDrops = nil
				out.items = append(out.items, repairItem{filler: session.Event{Type: session.TypeRepaired, Seq: seq, Time: out.time, Data: session.MustData(d), Ignorable: true}})
				p.Fillers++
			}
		}
		pendingDrops = nil
		out.items = append(out.items, repairItem{raw: c.raw})
		out.next, out.time = s+1, c.ev.Time
		p.Kept++
	}
	slices.SortFunc(p.Dropped, func(a, b session.DroppedLine) int { return int(a.Offset - b.Offset) })
	p.Removed = len(p.Dropped)
	p.fixed = out
	if _, err := decodeLog(id, path, p.render("")); err != nil {
		return RepairPlan{}, fmt.Errorf("persistence: repair %s: the repaired log would not be valid: %w", id, err)
	}
	return p, nil
}

// validLine decodes one line into an event that is valid at its own seq.
func validLine(raw []byte) (session.Event, error) {
	ev, err := decodeEnvelope(raw)
	if err != nil {
		return ev, err
	}
	if ev.Seq < 0 {
		return ev, fmt.Errorf("negative seq %d", ev.Seq)
	}
	return ev, session.ValidateEvent(ev, ev.Seq)
}

// recordStart is how every encoded event line begins (Event's key order).
var recordStart = []byte(`{"type":"`)

// salvage finds the first whole record inside a bad line (a torn write
// followed by the next record on the same line): its start and event.
func salvage(raw []byte) (int, session.Event, bool) {
	for i := 1; i < len(raw); {
		j := bytes.Index(raw[i:], recordStart)
		if j < 0 {
			break
		}
		i += j
		if ev, err := validLine(raw[i:]); err == nil {
			return i, ev, true
		}
		i++
	}
	return 0, session.Event{}, false
}

// render returns the repaired log: the header, the kept lines and
// fillers, and the summary naming backup.
func (p RepairPlan) render(backup string) []byte {
	var b bytes.Buffer
	b.Write(p.fixed.header)
	for _, it := range p.fixed.items {
		if it.raw != nil {
			b.Write(it.raw)
			b.WriteByte('\n')
			continue
		}
		encodeEvents(&b, []session.Event{it.filler})
	}
	sum := session.Event{Type: session.TypeRepaired, Seq: p.fixed.next, Time: p.fixed.time, Ignorable: true,
		Data: session.MustData(session.RepairedData{Dropped: p.Dropped, Backup: backup})}
	encodeEvents(&b, []session.Event{sum})
	return b.Bytes()
}

// Repair applies plan to session id: it takes the session's write lock
// (*LockedError if another writer holds it), checks the log still needs
// exactly that repair, keeps the whole file in a new .broken backup
// (written to a temp file, fsynced, linked to its real name, directory
// fsynced; a failure changes nothing: *BackupError), then writes the
// repaired log to a temp file, fsyncs it and renames it over the log (the
// directory fsynced). It returns the backup's path.
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
	s.removeRepairTemps(path)
	data, err := readFile(f, -1)
	if err != nil {
		return "", fmt.Errorf("persistence: read %s: %w", path, err)
	}
	now, err := planRepair(id, path, data)
	if err != nil {
		return "", err
	}
	if now.Line != plan.Line || now.Offset != plan.Offset || !slices.Equal(now.Dropped, plan.Dropped) {
		return "", fmt.Errorf("persistence: repair %s: the log changed since the repair was planned", id)
	}
	backup, err := s.keepBackup(id, path, data)
	if err != nil {
		return "", err
	}
	if err := s.replaceLog(path, now.render(backup)); err != nil {
		return backup, fmt.Errorf("persistence: repair %s: %w (the log is as it was; the original is also in %s)", path, err, backup)
	}
	s.log.Warn("repaired session log", "session_id", id, "path", path, "lines_dropped", len(now.Dropped), "events_kept", now.Kept, "fillers", now.Fillers, "backup", backup)
	return backup, nil
}

// Temp name patterns of a repair, beside the log; Scan ignores them (no
// .jsonl suffix) and the next repair removes what a kill left.
const (
	backupTemp = ".broken.tmp-*"
	repairTemp = ".repair.tmp-*"
)

func (s *Store) removeRepairTemps(path string) {
	for _, pat := range []string{backupTemp, repairTemp} {
		names, _ := filepath.Glob(globEscape(path) + pat)
		for _, n := range names {
			os.Remove(n)
		}
	}
}

// globEscape quotes the glob metacharacters of a path.
func globEscape(p string) string {
	var b bytes.Buffer
	for _, r := range p {
		if r == '*' || r == '?' || r == '[' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// step runs the fault hooks of a repair step.
func (s *Store) step(p FaultPoint) error {
	s.hit(p)
	if s.faultErr != nil {
		return s.faultErr(p)
	}
	return nil
}

// writeTemp writes data to a new temp file beside path (pattern suffix),
// runs the fault step, fsyncs and closes it, and returns its name. On
// failure the temp file is removed.
func (s *Store) writeTemp(path, pattern string, data []byte, p FaultPoint) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+pattern)
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = s.step(p)
	}
	if err == nil && !s.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// replaceLog makes data the content of path atomically: temp file,
// fsync, rename, directory fsync.
func (s *Store) replaceLog(path string, data []byte) error {
	tmp, err := s.writeTemp(path, repairTemp, data, FaultRepairLog)
	if err != nil {
		return err
	}
	if err := s.step(FaultRepairRename); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := s.step(FaultRepairRenamed); err != nil {
		return err
	}
	return s.syncDir()
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
