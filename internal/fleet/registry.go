package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// NodeInfo is what a node tells the fleet about itself with every
// heartbeat: who it is, what it can run and how full it is.
type NodeInfo struct {
	Name string `json:"name"`
	// Identity is the node's lasting identity (kept in its state folder):
	// a node restarted on the same state takes its registration over at
	// once, where another one given the same name waits for it to expire.
	Identity string `json:"identity"`
	// Instance tells two runs of one node apart: a node restarted under
	// its name is a new instance.
	Instance string `json:"instance"`
	// Labels are the operator's facts about the node (gpu=1, region=x),
	// which a session's placement may require.
	Labels map[string]string `json:"labels,omitempty"`
	// Engines are the engines the node can run.
	Engines []string `json:"engines,omitempty"`
	// Storage names the storage holding the node's session folders: nodes
	// with the same Storage reach each other's sessions (docs/fleet.md).
	Storage string `json:"storage"`
	// Live and MaxLive are the node's live runners and its cap
	// (--max-live).
	Live    int `json:"live"`
	MaxLive int `json:"maxLive"`
	// MemAvailable is the memory the node could still give runners, in
	// bytes (0: unknown).
	MemAvailable uint64 `json:"memAvailable,omitempty"`
	// Version is the supervisor's build.
	Version string `json:"version,omitempty"`
	// StartedAt is when this instance joined.
	StartedAt time.Time `json:"startedAt"`
}

// Capacity is how full a node is, as its heartbeat reports it.
type Capacity struct {
	// Live counts the node's runners that hold a slot: live, starting,
	// or being stopped (supervisor.Manager.Load).
	Live         int
	MaxLive      int
	MemAvailable uint64
}

// registry keeps this node in the fleet's node bucket, with a heartbeat,
// and keeps a view of every other node from a watch of the bucket.
type registry struct {
	f    *Fabric
	log  *zap.Logger
	self NodeInfo
	// capacity is asked at each heartbeat.
	capacity func() Capacity

	mu      sync.Mutex
	nodes   map[string]NodeInfo
	changed chan struct{} // closed and replaced on every change
}

func newRegistry(f *Fabric, self NodeInfo, capacity func() Capacity, log *zap.Logger) *registry {
	return &registry{f: f, log: log, self: self, capacity: capacity, nodes: map[string]NodeInfo{}, changed: make(chan struct{})}
}

// errNodeTaken is returned by join when a live instance holds the name.
var errNodeTaken = errors.New("node name taken")

// join registers this node. A name still held by an earlier instance
// (this node before a crash, or another machine by mistake) is waited for
// until it expires, as long as ctx allows.
func (r *registry) join(ctx context.Context) error {
	taken := func() error {
		return fmt.Errorf("fleet: node name %s is registered by a live supervisor: %w", r.self.Name, errNodeTaken)
	}
	seenTaken := false
	for {
		raw, err := r.info()
		if err != nil {
			return err
		}
		_, err = r.f.create(ctx, r.f.names.nodesBucket(), r.self.Name, raw)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			if seenTaken && ctx.Err() != nil {
				return taken() // the time ran out while waiting for the name
			}
			return fmt.Errorf("fleet: join as node %s: %w", r.self.Name, err)
		}
		seenTaken = true
		if e, gerr := r.f.nodes.Get(ctx, r.self.Name); gerr == nil {
			var old NodeInfo
			if json.Unmarshal(e.Value(), &old) == nil && r.self.Identity != "" && old.Identity == r.self.Identity {
				// This node's own earlier run: take the name over.
				if _, err := r.f.nodes.Update(ctx, r.self.Name, raw, e.Revision()); err == nil {
					return nil
				}
				continue
			}
		}
		r.log.Warn("node name still registered by another instance; waiting for it to expire",
			zap.String("node", r.self.Name), zap.Duration("nodeTTL", r.f.timing.NodeTTL))
		t := time.NewTimer(r.f.timing.Heartbeat)
		select {
		case <-ctx.Done():
			t.Stop()
			return taken()
		case <-t.C:
		}
	}
}

func (r *registry) info() ([]byte, error) {
	info := r.self
	c := r.capacity()
	info.Live, info.MaxLive, info.MemAvailable = c.Live, c.MaxLive, c.MemAvailable
	return json.Marshal(info)
}

// heartbeat publishes this node's capacity until ctx ends. The
// registration is left to expire: a node restarted within NodeTTL keeps
// its sessions (join takes its own registration over).
func (r *registry) heartbeat(ctx context.Context) {
	t := time.NewTicker(r.f.timing.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		raw, err := r.info()
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, r.f.timing.Request)
			_, err = r.f.nodes.Put(pctx, r.self.Name, raw)
			cancel()
		}
		if err != nil && ctx.Err() == nil {
			r.log.Warn("fleet heartbeat failed", zap.Error(err))
		}
	}
}

// watch follows the node bucket until ctx ends.
func (r *registry) watch(ctx context.Context, ready chan<- struct{}) error {
	return watchBucket(ctx, r.f.nodes, "nodes", ready, r.apply)
}

func (r *registry) apply(e jetstream.KeyValueEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Operation() {
	case jetstream.KeyValuePut:
		var info NodeInfo
		if err := json.Unmarshal(e.Value(), &info); err != nil || info.Name != e.Key() || !validToken(info.Name) {
			r.log.Warn("ignoring an unreadable node record", zap.String("node", e.Key()), zap.Error(err))
			return
		}
		if info.Name == r.self.Name && info.Instance != r.self.Instance && info.Identity != r.self.Identity {
			r.log.Error("another supervisor joined the fleet under this node's name", zap.String("node", info.Name))
		}
		r.nodes[e.Key()] = info
	default:
		delete(r.nodes, e.Key())
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// list returns the nodes alive now, by name.
func (r *registry) list() []NodeInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Values(r.nodes))
	slices.SortFunc(out, func(a, b NodeInfo) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// get returns node name when it is alive.
func (r *registry) get(name string) (NodeInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info, ok := r.nodes[name]
	return info, ok
}

// changes returns a channel closed at the next change of the view.
func (r *registry) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}
