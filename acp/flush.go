package acp

// This file lets an in-process driver (the scenario runner) wait for the
// session/update traffic of every bound session, so what it records next
// is ordered after updates of autonomous turns.

import "context"

// FlushUpdates waits until every session/update queued so far, for every
// session bound to this connection, has been written. Only ctx ending is
// an error.
func (s *Server) FlushUpdates(ctx context.Context) error {
	s.mu.Lock()
	bs := make([]*bound, 0, len(s.sessions))
	for _, b := range s.sessions {
		bs = append(bs, b)
	}
	s.mu.Unlock()
	for _, b := range bs {
		if err := s.flush(ctx, b); err != nil {
			return err
		}
	}
	return nil
}
