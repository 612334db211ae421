// Package projcache is the projection cache: derived, rebuildable
// checkpoints of the projection values of persisted sessions, so that a
// listing can classify a cold child without reading its log.
//
// Layout: one row per session at <dataDir>/projections/<id>.json,
//
//	{"id":…,"createdAt":…,"size":…,"asOfSeq":…,"units":{"<key>":{"stateVersion":n,"value":…}}}
//
// written atomically (a temporary file in the same directory, then rename).
// Files are 0600 and the directory 0700. Rows are not fsynced: a row lost or
// torn by a crash is simply a miss.
//
// Validation: Get serves a row only when its id and createdAt equal the
// session header's, its size equals the session log's current size (so any
// append, repair or rewrite since the checkpoint invalidates it), and only
// the units whose stateVersion equals the registered unit's. A missing,
// unreadable, garbage or stale row is a miss, never an error the listing
// must handle. Deleting the directory only costs cold reads.
//
// # Catalog index
//
// Index (index.go) is one more derived file, <dataDir>/projections/catalog.idx,
// that lets a listing skip opening logs and rows altogether. It holds one
// record per stored session: its header, the projection values of its last
// checkpoint and the size of log they are valid for, and a witness of the
// log file (size, modification time in nanoseconds, inode number) taken
// when the record was made. Records are binary (varints, length-prefixed
// strings) with a CRC-32C each; the parse stops at the first bad record.
//
// Scan reads the sessions directory, the index (its parse is memoized while
// the file's own size, time and inode are unchanged) and stats every log
// (no open: a FIFO cannot block it). A session whose record's witness
// equals the stat is served from the record: header, and values if the log
// still has the size they were checkpointed at. Any other session — no
// record, a changed witness, a damaged index — is rebuilt exactly as before
// the index existed: its header is read (persistence.Store.Entry) and its
// cache row checked, and the rebuilt record is written back (atomically,
// temporary file and rename), so deleting or corrupting the index yields
// identical listings and costs one slow listing. A log deleted from the
// directory drops out of the scan and its record out of the file; a log
// replaced under the same name gets a new witness. Logs modified within
// RacyWindow (1 s) before the scan are served but not recorded, because a
// same-size rewrite within one timestamp tick would keep their witness;
// Checkpoint appends records directly (one write, O_APPEND), as the
// session's lock holder has just flushed the log itself. Appends racing a
// rewrite in another process may be lost; they are rebuilt later.
// Package app wires one Index per process and serves three listings from
// it: the subagent catalog, `acp-agent sessions` and ACP session/list.
//
// The cache is never an authorization source: it is a hint for display and
// listing only. Consumers that act on a child (resume, send_message) read
// the log itself.
//
// Layering: projcache imports only agent/session and the standard library.
// It reaches the projection registry through the Projector interface
// declared here (agent/projection.Registry implements it) and session
// storage through HeaderReader and the sessions directory's path.
//
// Concurrency: a *Cache and an *Index are safe for concurrent use;
// concurrent Puts of the same row are last-rename-wins, and every row
// written is complete. Neither holds open files or goroutines (a Scan's
// parallel stats end with it); there is nothing to close.
package projcache
