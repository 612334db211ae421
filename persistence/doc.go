// Package persistence is the durable JSONL session store of acp-agent: one
// append-only file per session, read back with crash recovery.
//
// # Ownership and layering
//
// persistence owns the bytes of session logs and nothing of their meaning:
// it frames events as JSONL lines, creates and publishes files, holds the
// single-writer lock, cuts a torn tail, truncates, appends and fsyncs, and
// keeps the durable watermark (SyncTo, Durable). What an event means is
// the session package's: ValidateEvent judges a line, and
// session.CloseInterruptedTurn says which events close a turn a crash
// left open; persistence only shows them (Inspect) or commits them (Load).
//
// persistence (with persistence/projcache) imports agent/session and the
// standard library only. It must not import agent (the loop),
// agent/model, agent/tool, agent/projection, subagent, driver, acp or app;
// internal/layering enforces this. Nothing below cmd/app imports it: the
// live store reaches it through session.Persister (Attach: Open, Appended,
// Release), every other consumer through an interface it declares itself
// and app adapts, one adapter per consumer (app/store.go): agent.Journal
// (the loop's write-ahead points), acp.SessionStore and acp.Options.Durable,
// subagent.Durable.
//
// # File format
//
// A data directory holds sessions/<id>.jsonl, one file per session, created
// 0600 in 0700 directories. Ids are checked with session.ValidateID before
// they touch a path, so a hostile id (separators, "..", NUL, too long)
// fails with an error wrapping session.ErrInvalidID and creates nothing.
//
// Line 1 is the header, {"type":"session","version":0,"id":...} as written
// by session.MarshalHeaderLine and checked by session.ParseHeaderLine (its
// id must match the file name). Every later line is one event envelope,
// the encoding/json form of session.Event with keys in the order type,
// seq, time, data, sourceEventSeqs, surfaceOp, ignorable; the event on line
// n+2 has seq n (contiguous from 0). Each line ends with "\n". Writers emit
// whole lines only, one write call per batch.
//
// # Torn tail versus corruption
//
// Only the final line of the file may be torn: a final line without its
// newline (whatever its bytes), or a final line that is not a parsable
// JSON event envelope. A torn tail is what a crash in the middle of a write
// leaves; it is not part of the log. Anything else is corruption and
// yields a *CorruptError with the 1-based line and byte offset: an
// unreadable header, an unparsable line before the last, an event that
// fails session.ValidateEvent (seq gap, missing surfaceOp, unknown event
// type without ignorable, which keeps *session.UnsupportedTypeError
// reachable through errors.As), or a malformed payload inside an
// interrupted turn.
//
// Inspect never changes the file: it returns the valid prefix (Torn set
// when a torn line was ignored) and, if the log ends inside a turn
// (session.OpenTurn), the in-memory closing events of
// session.CloseInterruptedTurn (an error tool/result for every call
// without a result, step/end if a step is open, then turn/end
// {kind:"interrupted"}; subagent-contract.md §7). Load commits the same
// view: it copies the torn bytes to a new <id>.jsonl.broken (or
// .broken.N: an earlier backup is never overwritten) and fsyncs it, then
// truncates, appends the closing events and fsyncs; a backup that cannot
// be kept stops the load with a *BackupError and the file unchanged
// (backup.go). A malformed payload inside the open turn is reported as
// corruption of its line.
//
// A bad line in the middle is not repaired by Load: InspectValid returns
// the valid part before it (session/load shows it read-only), and
// PlanRepair/Repair (`acp-agent sessions repair`) keep the whole file in
// a backup first, then drop each bad line on its own, keep every valid
// event after it and record a session/repaired summary (repair.go).
//
// Damage (damage.go) is the one wording of what is wrong with a log —
// torn tail, bad line, seq gap, bad header, unreadable file, repaired —
// that every command and notice uses (DamageOf classifies a
// *CorruptError or *UnreadableError; Text words it; Advice says whether
// repair helps), so the same damage reads the same everywhere.
//
// # Decoding
//
// Cold reads (Inspect, Load, the catalog's cache misses) validate and
// decode each line in one pass (envelope.go): a scanner checks the whole
// line against JSON's grammar as encoding/json does and, for the canonical
// envelope our writer produces (plain lowercase keys, integer seq and
// time, "append" surfaceOp, integer sourceEventSeqs), extracts the
// envelope directly, leaving the payload as raw bytes that alias the file
// buffer (projection units decode only the payloads they need). Any other
// line, valid or not, is handed to encoding/json, so events and errors are
// exactly json.Unmarshal's (FuzzDecodeEnvelope compares the two); the torn
// tail and corruption rules above are unchanged. String contents, most of
// a log's bytes, are scanned eight bytes at a time.
//
// The decoder was chosen by measurement (BenchmarkDecodeLog and a scratch
// comparison on the same 1 MiB log of typical events, 2-core VM, side by
// side, MB/s): encoding/json Unmarshal per line 59-62 (the previous
// decoder; json.Valid alone 237), github.com/valyala/fastjson validation
// alone 380, github.com/segmentio/encoding/json 410,
// github.com/goccy/go-json 454, this single pass 636 (1.65 ms per MB
// against 17.8). encoding/json/v2 is not available without a
// GOEXPERIMENT in Go 1.26, so it was not considered. The standard library
// with a smarter structure beat the libraries, so no dependency was added.
// The catalog's 100 cold children with 1 MiB logs and no cache went from
// 500-1,040 ms to 66-120 ms on the same machine depending on its load
// (BenchmarkListChildren/nocache/D=100/log=1MB; the TypeScript reference:
// 1,277-1,437 ms).
//
// # Durability
//
// A new file is written to a dot-named temp file in the sessions
// directory, fsynced, locked, hard-linked to its final name (which refuses
// to replace an existing session) and the directory is fsynced; so a
// session file, once visible, always has a complete header. Events reach
// the store through session.Persister.Appended (Attach), before any
// observer of the live store sees them, and are only buffered in memory;
// SyncTo and Flush write a session's buffer with one write call and fsync,
// FlushAll does so for all. The agent loop asks SyncTo (through
// agent.Journal) before each model request, after each tool/call and after
// each turn/end; Release and Close flush and fsync. Run writes buffers without fsync every
// FlushInterval (200ms), so a crash of the process loses at most that much
// and a power loss at most what followed the last checkpoint.
//
// What is shown is durable: the ACP emitter shows a tool call only after
// SyncTo covers it, and a text or thought chunk only after SyncSoon does
// (group.go). SyncSoon is a group commit: the first chunk after an idle
// window commits at once; later ones wait until the window (10 ms) ends or
// a few KiB (4) are buffered, and share that one fsync.
//
// # Hostile data directories
//
// Session files are opened with O_NONBLOCK and fstat'ed before any read,
// so a FIFO, socket or device in place of a log is reported as an
// *UnreadableError (ErrUnreadable) and never waited on. Scan lists every
// <id>.jsonl name either as an Entry or as an Unreadable row saying what is
// wrong (a directory, an empty file, a bad or missing header...); List is
// Scan with those rows logged and dropped. Parent cycles are judged from
// headers by session.CorruptParents. Open removes dot-named temp files left
// by a crash between creating and publishing a session; a creator holds
// its temp file's lock from the start, so a temp file whose lock is free
// has no creator and one whose lock is taken is left alone. A symlink in
// place of a session file is refused ("symlink") and never followed: every
// open of a session file uses O_NOFOLLOW, and backups are created with
// O_EXCL|O_NOFOLLOW. Open errors keep their cause (permission denied,
// read-only file system) with the file's path.
//
// # Large logs
//
// Load decodes a log line by line through a fixed read buffer
// (stream.go), with decodeLog's rules, so loading holds the decoded events
// but never also the file's bytes; Header reads only the header line.
//
// A held session's log is also read back while it is live
// (session.Reader, readback.go): a live session keeps in memory only the
// events not yet written and a recent tail (session.DefaultResidentBytes),
// and its readers of older events (a fork's seed, a settlement's output, a
// rebuilt model view, a session/load replay, which streams the log in
// batches) get them from the file. Readable is
// the count of events written; ReadEvents decodes a range with the fast
// envelope decoder, starting from a sparse index of line offsets (one per
// 64 events) built lazily by a newline scan, so a read near the end of a
// large log does not decode its beginning. A line changed under a held
// session is a *CorruptError of that line.
//
// # Write-ahead rule
//
// Nothing is shown or done that a restart could forget. A tool call's
// tool/call event, and everything before it (the assistant text and the
// assistant/message that asked for it), is written and fsynced before the
// tool executes and before any update about the call reaches the client.
// Effects of a tool (a child session created by a delegation, an edit, a
// command) therefore always follow the durable record of the call that
// asked for them: a child session becomes visible only after its parent's
// record of the delegation is durable. The agent loop reaches this point
// through agent.Journal.SyncTo after appending tool/call; the ACP
// emitter asks SyncTo(id, seq) before it sends the tool_call update, which
// is free when the durable watermark (Durable) already covers seq. Text
// chunks are not waited for: they stay batched (Run's writes, the next
// checkpoint), so a crash may lose the last streamed text, never a tool call
// the client saw. Load fsyncs a log before returning it, so a replay never
// shows lines a crashed writer left only in the page cache.
//
// # Locking
//
// A session is written by one holder only. Holding it means an open file
// with an exclusive flock(2), taken without blocking when the file is
// created, loaded (Load) or restored (Open with restored=true). flock
// locks belong to the open file, so a second Store in the same process and
// another process both get *LockedError; the lock vanishes with the
// descriptor, so a crashed holder leaves none behind. Readers (List,
// Inspect) take no lock: they see a prefix of whole lines plus at most one
// torn line, which they ignore.
//
// # Concurrency and ownership
//
// A *Store is safe for concurrent use. It owns the files and locks of the
// sessions it holds; Release(id) returns one (session.Store.Remove calls
// it), Close returns all after a final flush. Appends never wait for disk
// I/O: Appended only appends to a per-session buffer, and writers take
// the buffer before writing. For a held session Inspect returns the
// in-memory view (written plus buffered events) and adds no closing
// events, so a reader in the process never sees less than was appended.
// Run's goroutine belongs to its caller (an oklog/run actor); the Store
// starts none.
package persistence
