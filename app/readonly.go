package app

// This file composes the read-only views of a data directory that the
// commands of app/cli print (no agent process runs): the subagent catalog
// of stored sessions, read through the catalog index and the cache.

import (
	"path/filepath"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// OpenCatalog is the durable subagent catalog of st's data directory, as
// a served session's catalog would list it, with nothing live: it scans
// the catalog index, reads cache rows and inspects logs, and never locks,
// repairs or resumes a session (the only file it may write is the derived
// index, when it had to rebuild rows).
func OpenCatalog(st *persistence.Store) (*subagent.Catalog, error) {
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		return nil, err
	}
	// A repaired child's row says so (the cache's values hold it).
	if _, err := reg.Register(projection.Repaired()); err != nil {
		return nil, err
	}
	// The cache lives in the data directory, next to sessions/.
	cache, err := projcache.Open(filepath.Dir(st.Dir()), reg)
	if err != nil {
		return nil, err
	}
	return &subagent.Catalog{
		Sessions:    session.NewStore(nil),
		Projections: reg,
		Persisted:   durableStore{st},
		Cache:       cache,
		Index:       catalogIndex{cache.Index(st.Dir(), HeaderReader(st))},
	}, nil
}
