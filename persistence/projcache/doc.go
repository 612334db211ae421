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
// The cache is never an authorization source: it is a hint for display and
// listing only. Consumers that act on a child (resume, send_message) read
// the log itself.
//
// Layering: projcache imports only agent/session and the standard library.
// It reaches the projection registry through the Projector interface
// declared here (agent/projection.Registry implements it).
//
// Concurrency: a *Cache is safe for concurrent use; concurrent Puts of the
// same row are last-rename-wins, and every row written is complete. The
// cache holds no open files and no goroutines; there is nothing to close.
package projcache
