package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// Record is a session as the fleet knows it: which node it belongs to,
// where its folder is, how it was placed, and whether it lost its node.
// The catalog holds one per session.
type Record struct {
	ID string `json:"id"`
	// Node is the node the session belongs to: it runs there, or starts
	// there at its next use.
	Node string `json:"node"`
	// Storage is the storage holding the session's folder; only nodes on
	// it can run the session.
	Storage   string    `json:"storage"`
	Engine    string    `json:"engine,omitempty"`
	Placement Placement `json:"placement"`
	// State is "" while the session's node is in the fleet, StateOrphaned
	// once its node left and before another took the session, and
	// StateFailed when no node in the fleet reaches its folder.
	State string `json:"state,omitempty"`
	// Lost says how the session lost its node (with State).
	Lost *Loss `json:"lost,omitempty"`
	// Moves counts the times the session moved to another node.
	Moves     int       `json:"moves,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Session states in the catalog.
const (
	StateOrphaned = "orphaned"
	StateFailed   = "failed"
)

// Loss says how a session lost its node.
type Loss struct {
	// From is the node that left.
	From string    `json:"from"`
	At   time.Time `json:"at"`
	// WasLive says the session's runner was live on it: the session is
	// resumed as soon as another node takes it.
	WasLive bool `json:"wasLive"`
	// Error says why no node took the session (StateFailed).
	Error string `json:"error,omitempty"`
}

// catalog keeps the fleet's session records: a watch of the bucket keeps
// a copy on every node, so routing a request needs no round trip.
type catalog struct {
	f   *Fabric
	log *zap.Logger

	mu      sync.Mutex
	records map[string]catalogEntry
}

type catalogEntry struct {
	rec Record
	rev uint64
}

func newCatalog(f *Fabric, log *zap.Logger) *catalog {
	return &catalog{f: f, log: log, records: map[string]catalogEntry{}}
}

// watch follows the bucket until ctx ends; ready is closed once the
// records that were there at the start are in.
func (c *catalog) watch(ctx context.Context, ready chan<- struct{}) error {
	return watchBucket(ctx, c.f.sessions, "sessions", ready, c.apply)
}

func (c *catalog) apply(e jetstream.KeyValueEntry) {
	if !validToken(e.Key()) {
		// Not a session id: the key would be a path on some node.
		c.log.Warn("ignoring a catalog key that is no session id", zap.String("key", e.Key()))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.records[e.Key()]; ok && cur.rev >= e.Revision() {
		return // a direct read got here first
	}
	switch e.Operation() {
	case jetstream.KeyValuePut:
		var rec Record
		if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.ID != e.Key() || !validToken(rec.Node) {
			c.log.Warn("ignoring an unreadable session record", zap.String("session", e.Key()), zap.Error(err))
			return
		}
		c.records[e.Key()] = catalogEntry{rec: rec, rev: e.Revision()}
	default:
		delete(c.records, e.Key())
	}
}

// get returns session id's record from the local copy, reading the bucket
// when the copy has not heard of it yet (a session created a moment ago
// on another node).
func (c *catalog) get(ctx context.Context, id string) (Record, uint64, error) {
	c.mu.Lock()
	e, ok := c.records[id]
	c.mu.Unlock()
	if ok {
		return e.rec, e.rev, nil
	}
	return c.read(ctx, id)
}

// read reads session id's record from the bucket's leader, so it sees
// every write acknowledged before it (a read served by a replica may lag).
func (c *catalog) read(ctx context.Context, id string) (Record, uint64, error) {
	if !validToken(id) {
		return Record{}, 0, wire.Errorf(wire.CodeNotFound, "session %s not found", id)
	}
	ctx, cancel := context.WithTimeout(ctx, c.f.timing.Request)
	defer cancel()
	raw, rev, err := c.f.latest(ctx, c.f.names.sessionsBucket(), id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Record{}, 0, wire.Errorf(wire.CodeNotFound, "session %s not found", id)
	}
	if err != nil {
		return Record{}, 0, wire.Errorf(wire.CodeUnavailable, "the fleet's catalog: %v", err)
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil || rec.ID != id {
		return Record{}, 0, wire.Errorf(wire.CodeInternal, "session %s: unreadable catalog record: %v", id, err)
	}
	c.mu.Lock()
	if cur, ok := c.records[id]; !ok || cur.rev < rev {
		c.records[id] = catalogEntry{rec: rec, rev: rev}
	}
	c.mu.Unlock()
	return rec, rev, nil
}

// create adds a new session's record.
func (c *catalog) create(ctx context.Context, rec Record) (uint64, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.f.timing.Request)
	defer cancel()
	rev, err := c.f.create(ctx, c.f.names.sessionsBucket(), rec.ID, raw)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, wire.Errorf(wire.CodeConflict, "session %s is already in the fleet's catalog", rec.ID)
	}
	if err != nil {
		return 0, wire.Errorf(wire.CodeUnavailable, "the fleet's catalog: %v", err)
	}
	return rev, nil
}

// update writes rec over revision rev; it fails with conflict when the
// record changed since.
func (c *catalog) update(ctx context.Context, rec Record, rev uint64) (uint64, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.f.timing.Request)
	defer cancel()
	nrev, err := c.f.sessions.Update(ctx, rec.ID, raw, rev)
	if isRevisionMismatch(err) {
		return 0, wire.Errorf(wire.CodeConflict, "session %s changed in the fleet's catalog meanwhile", rec.ID)
	}
	if err != nil {
		return 0, wire.Errorf(wire.CodeUnavailable, "the fleet's catalog: %v", err)
	}
	return nrev, nil
}

// remove deletes session id's record.
func (c *catalog) remove(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, c.f.timing.Request)
	defer cancel()
	if err := c.f.sessions.Delete(ctx, id); err != nil {
		return wire.Errorf(wire.CodeUnavailable, "the fleet's catalog: %v", err)
	}
	return nil
}

// all returns every record of the local copy with its revision.
func (c *catalog) all() []catalogEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]catalogEntry, 0, len(c.records))
	for _, e := range c.records {
		out = append(out, e)
	}
	return out
}
