package session

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Clock tells the time in Unix epoch milliseconds.
type Clock interface{ Now() int64 }

// IDSource mints ids.
type IDSource interface{ NewID() string }

// Sources hands each session its own clock and id source. Scenario mode
// uses per-session counters so recordings do not depend on goroutine
// scheduling: what a session observes depends only on its own history.
type Sources interface {
	For(sessionID string) (Clock, IDSource)
	// NewSessionID mints the id of a new top-level session.
	NewSessionID() string
}

// WallSources is the production source: the wall clock and random UUIDv4s.
type WallSources struct{}

type wallClock struct{}

func (wallClock) Now() int64 { return time.Now().UnixMilli() }

type randomIDs struct{}

func (randomIDs) NewID() string { return uuid.NewString() }

// For returns the wall clock and random ids.
func (WallSources) For(string) (Clock, IDSource) { return wallClock{}, randomIDs{} }

// NewSessionID returns a random UUIDv4.
func (WallSources) NewSessionID() string { return uuid.NewString() }

// ScenarioEpoch is the first timestamp of recorded scenario runs
// (2026-01-01T00:00:00Z), shared by the in-process runner and the binary's
// deterministic mode so both record the same bytes.
const ScenarioEpoch = 1767225600000

// DeterministicSources derives every id and timestamp from per-session
// counters: the n-th id minted by session S is a UUID-shaped hash of
// (S, n), and the n-th clock reading of S is Epoch + n*Step milliseconds.
// Top-level session ids come from one global counter, which is deterministic
// as long as sessions are created by the (sequential) client.
// It is safe for concurrent use.
type DeterministicSources struct {
	Epoch int64 // first timestamp, epoch ms
	Step  int64 // ms between two readings of one session's clock

	mu       sync.Mutex
	sessions map[string]*detState
	top      atomic.Int64
}

type detState struct {
	ids  atomic.Int64
	time atomic.Int64
}

type detClock struct {
	s           *detState
	epoch, step int64
}

func (c detClock) Now() int64 { return c.epoch + c.s.time.Add(1)*c.step }

type detIDs struct {
	s    *detState
	name string
}

func (d detIDs) NewID() string { return HashID(d.name, d.s.ids.Add(1)) }

// For returns the clock and id source of sessionID. Calling For twice with
// the same id returns sources that share their counters.
func (d *DeterministicSources) For(sessionID string) (Clock, IDSource) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sessions == nil {
		d.sessions = make(map[string]*detState)
	}
	st, ok := d.sessions[sessionID]
	if !ok {
		st = &detState{}
		d.sessions[sessionID] = st
	}
	step := d.Step
	if step == 0 {
		step = 1000
	}
	return detClock{s: st, epoch: d.Epoch, step: step}, detIDs{s: st, name: sessionID}
}

// NewSessionID returns the next top-level session id.
func (d *DeterministicSources) NewSessionID() string { return HashID("session", d.top.Add(1)) }

// HashID returns a lowercase UUID-shaped (version 4 layout) id derived from
// name and n, so deterministic ids look and sort like production ones.
func HashID(name string, n int64) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", name, n)))
	sum[6] = sum[6]&0x0f | 0x40
	sum[8] = sum[8]&0x3f | 0x80
	u, _ := uuid.FromBytes(sum[:16])
	return u.String()
}

// Resume advances the counters of sessionID past a restored log of n
// events, so a session reloaded in a new process neither goes back in time
// nor mints an id it minted before (every minted id lands in at least one
// event).
func (d *DeterministicSources) Resume(sessionID string, n int) {
	d.For(sessionID) // ensure state exists
	d.mu.Lock()
	st := d.sessions[sessionID]
	d.mu.Unlock()
	for _, c := range []*atomic.Int64{&st.ids, &st.time} {
		for {
			cur := c.Load()
			if cur >= int64(n) || c.CompareAndSwap(cur, int64(n)) {
				break
			}
		}
	}
}
