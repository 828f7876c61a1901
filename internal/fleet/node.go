package fleet

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// Local is this node's own supervisor, as the fleet needs it: the sessions
// whose folders it reaches and the runners it starts.
type Local interface {
	// EventLog reads the event log of a session whose folder is here.
	EventLog
	// Capacity is how full the node is now, for its heartbeat.
	Capacity() Capacity
	// Resume starts session id's runner: a session this node took over
	// from one that left, or its own that it gave up while cut off.
	Resume(ctx context.Context, id string) error
	// StopRunner stops session id's runner, whose lease is lost, and
	// returns once it is gone; it is killed if need be to be gone by
	// deadline (this machine's monotonic clock).
	StopRunner(id string, deadline time.Time)
	// Reachable reports whether session id's folder is reachable here.
	Reachable(id string) bool
}

// Config says how a node joins a fleet.
type Config struct {
	Fabric FabricConfig
	// Node is this node's name, unique in the fleet.
	Node string
	// Identity is the node's lasting identity, kept with its state: a
	// restart on the same state takes the node's registration over at
	// once (empty: a new one every run).
	Identity string
	// Labels are facts about the node a placement may require.
	Labels map[string]string
	// Engines are the engines the node can run (empty: any).
	Engines []string
	// Storage names the storage of this node's session folders: nodes
	// that name the same storage reach each other's sessions.
	Storage string
	// Version is the supervisor's build, shown in the registry.
	Version string
	// Handlers serve the requests other nodes send this one, by
	// operation. They are listening before the node is in the registry,
	// so no node routes to it before it can answer.
	Handlers map[string]Handler
	Logger   *zap.Logger
}

// Handler serves one kind of request from another node: it reads the JSON
// request and returns what is sent back as JSON, or an error that keeps
// its pkg/wire code on the far side.
type Handler func(ctx context.Context, req []byte) (any, error)

// Node is this supervisor's membership of a fleet.
type Node struct {
	f        *Fabric
	cfg      Config
	log      *zap.Logger
	local    Local
	instance string

	reg     *registry
	leases  *leaseKeeper
	catalog *catalog
	rpc     *rpcServer
	orphans *orphans

	placeMu sync.Mutex
	placer  *placer

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	startOnce sync.Once

	mu       sync.Mutex
	claims   map[string]*Claim
	releases map[string]chan struct{} // closed when the release of a session's claim is done
	closed   bool
}

// Join joins the fleet over nc as cfg.Node: it opens the fabric,
// registers the node (waiting for an earlier instance's registration to
// expire), and starts its heartbeat, lease renewals, watches and request
// service. The node takes over sessions from nodes that left, and resumes
// its own, only once Start is called: local must be ready to be asked
// (Local.Resume calls back into Hold).
func Join(ctx context.Context, nc *nats.Conn, cfg Config, local Local) (*Node, error) {
	if !validToken(cfg.Node) {
		return nil, fmt.Errorf("fleet: node name %q: want 1 to 64 letters, digits, '-' or '_'", cfg.Node)
	}
	for k, v := range cfg.Labels {
		if k == "" || len(k) > 64 || len(v) > 256 {
			return nil, fmt.Errorf("fleet: label %q=%q: keys 1 to 64 bytes, values at most 256", k, v)
		}
	}
	if cfg.Storage == "" {
		return nil, errors.New("fleet: the node's storage is not named")
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("node", cfg.Node))
	f, err := Open(ctx, nc, cfg.Fabric)
	if err != nil {
		return nil, err
	}
	n := &Node{
		f: f, cfg: cfg, log: log, local: local, instance: newInstanceID(),
		claims: map[string]*Claim{}, releases: map[string]chan struct{}{},
		placer: newPlacer(rand.IntN),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.reg = newRegistry(f, NodeInfo{
		Name: cfg.Node, Identity: cfg.Identity, Instance: n.instance, Labels: cfg.Labels, Engines: cfg.Engines,
		Storage: cfg.Storage, Version: cfg.Version, StartedAt: time.Now().UTC(),
	}, local.Capacity, log)
	n.leases = newLeaseKeeper(f, cfg.Node, n.instance, log)
	n.catalog = newCatalog(f, log)
	n.rpc = newRPCServer(f, log)
	n.orphans = newOrphans(n)

	// The views are complete before the node serves anything.
	nodesReady, catalogReady, leasesReady := make(chan struct{}), make(chan struct{}), make(chan struct{})
	n.spawn(func() { n.reg.watch(n.ctx, nodesReady) })
	n.spawn(func() { n.catalog.watch(n.ctx, catalogReady) })
	n.spawn(func() { n.orphans.watchLeases(n.ctx, leasesReady) })
	for _, ready := range []chan struct{}{nodesReady, catalogReady, leasesReady} {
		select {
		case <-ready:
		case <-ctx.Done():
			n.stop()
			return nil, fmt.Errorf("fleet: join: %w", ctx.Err())
		}
	}
	for op, h := range cfg.Handlers {
		n.rpc.handle(op, func(ctx context.Context, req json.RawMessage) (any, error) { return h(ctx, req) })
	}
	if err := n.rpc.serve(cfg.Node); err != nil {
		n.stop()
		return nil, err
	}
	if err := n.reg.join(ctx); err != nil {
		n.rpc.close()
		n.stop()
		return nil, err
	}
	n.spawn(func() { n.reg.heartbeat(n.ctx) })
	n.spawn(func() { n.leases.run(n.ctx) })
	log.Info("joined the fleet", zap.String("fleet", f.names.fleet), zap.String("instance", n.instance), zap.String("storage", cfg.Storage))
	return n, nil
}

// Start lets the node take over sessions whose node left the fleet, and
// resume its own that it gave up while cut off.
func (n *Node) Start() {
	n.startOnce.Do(func() { n.spawn(func() { n.orphans.run(n.ctx) }) })
}

func newInstanceID() string {
	var b [8]byte
	if _, err := cryptoRead(b[:]); err != nil {
		return fmt.Sprintf("t%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

var cryptoRead = crand.Read

func (n *Node) spawn(fn func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		fn()
	}()
}

// Call sends a request to node and decodes its result into res. A node
// in the registry that nobody answers for yet (its NATS server died and
// it is on its way to another) is given half the request timeout to be
// back; one not in the registry, none.
func (n *Node) Call(ctx context.Context, node, op string, req, res any) error {
	var absentFor time.Duration
	if n.Alive(node) {
		absentFor = n.f.timing.Request / 2
	}
	return n.f.call(ctx, node, op, req, res, absentFor)
}

// Name is this node's name.
func (n *Node) Name() string { return n.cfg.Node }

// Fabric is the fleet's shared state.
func (n *Node) Fabric() *Fabric { return n.f }

// Nodes lists the nodes in the fleet now.
func (n *Node) Nodes() []NodeInfo { return n.reg.list() }

// Alive reports whether node is in the fleet now.
func (n *Node) Alive(node string) bool {
	_, ok := n.reg.get(node)
	return ok
}

// Place chooses the node for a new session.
func (n *Node) Place(w Want) (Placement, error) {
	n.placeMu.Lock()
	defer n.placeMu.Unlock()
	held := map[string]int{}
	for _, e := range n.catalog.all() {
		held[e.rec.Node]++
	}
	return n.placer.place(w, n.reg.list(), held)
}

// Register records a session created on this node in the catalog.
func (n *Node) Register(ctx context.Context, id, engine string, p Placement) error {
	_, err := n.catalog.create(ctx, Record{
		ID: id, Node: n.cfg.Node, Storage: n.cfg.Storage, Engine: engine, Placement: p, CreatedAt: time.Now().UTC(),
	})
	return err
}

// Forget removes a deleted session from the catalog.
func (n *Node) Forget(ctx context.Context, id string) error { return n.catalog.remove(ctx, id) }

// Record returns session id's record in the catalog.
func (n *Node) Record(ctx context.Context, id string) (Record, error) {
	rec, _, err := n.catalog.get(ctx, id)
	return rec, err
}

// Refresh reads session id's record from the fabric, not from this
// node's copy.
func (n *Node) Refresh(ctx context.Context, id string) (Record, error) {
	rec, _, err := n.catalog.read(ctx, id)
	return rec, err
}

// SetPlacement records how a session of this node was placed, and
// returns its record.
func (n *Node) SetPlacement(ctx context.Context, id string, p Placement) (Record, error) {
	for range 3 {
		rec, rev, err := n.catalog.read(ctx, id)
		if err != nil {
			return rec, err
		}
		rec.Placement = p
		if _, err = n.catalog.update(ctx, rec, rev); !errors.Is(err, wire.ErrConflict) {
			return rec, err
		}
	}
	return Record{}, wire.Errorf(wire.CodeConflict, "session %s: its record kept changing", id)
}

// Records returns every session's record.
func (n *Node) Records() []Record {
	all := n.catalog.all()
	out := make([]Record, len(all))
	for i, e := range all {
		out[i] = e.rec
	}
	return out
}

// TermSubject is the subject of one direction ("in" or "out") of a
// terminal bridged through node.
func (n *Node) TermSubject(node, bridge, dir string) string {
	return n.f.names.term(node, bridge, dir)
}

// Replay reads session id's events from the fleet's replica.
func (n *Node) Replay(ctx context.Context, id string, from int64, follow bool) (EventStream, error) {
	return n.f.Replay(ctx, id, from, follow)
}

// Holds reports whether this node holds session id's lease now: its
// runner is live here, and the session is this node's beyond doubt.
func (n *Node) Holds(id string) bool {
	n.mu.Lock()
	c := n.claims[id]
	n.mu.Unlock()
	return c != nil && c.lease.Err() == nil
}

// Claim is this node's hold on a session while its runner is live here:
// the lease, and the copy of its events into the replica.
type Claim struct {
	n       *Node
	lease   *Lease
	stopPub context.CancelFunc
	pubDone chan struct{}
	once    sync.Once
}

// Fence is the claim's fencing token (Lease.Fence).
func (c *Claim) Fence() uint64 { return c.lease.Fence() }

// Lost is closed when the runner must stop (Lease.Lost); the node then
// stops it through Local.StopRunner itself.
func (c *Claim) Lost() <-chan struct{} { return c.lease.Lost() }

// Hold takes session id's lease before its runner starts here. It fails
// with conflict when the session belongs to another node or is live on
// one, and waits, as long as ctx allows, for a lease left by an earlier
// instance of this node (whose runners died with it) to expire.
func (n *Node) Hold(ctx context.Context, id string) (*Claim, error) {
	for {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return nil, wire.Errorf(wire.CodeUnavailable, "the supervisor is leaving the fleet")
		}
		if c := n.claims[id]; c != nil {
			n.mu.Unlock()
			return nil, wire.Errorf(wire.CodeConflict, "session %s is already held by this node", id)
		}
		rel := n.releases[id]
		n.mu.Unlock()
		if rel == nil {
			break
		}
		// The last runner's release is still copying its events.
		select {
		case <-rel:
		case <-ctx.Done():
			return nil, wire.Errorf(wire.CodeTimeout, "session %s: waiting for its last runner's release", id)
		}
	}
	// Read afresh: a session that moved while this node's copy lagged is
	// not started here.
	rec, _, err := n.catalog.read(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.Node != n.cfg.Node {
		return nil, wire.Errorf(wire.CodeConflict, "session %s belongs to node %s, not this one", id, rec.Node)
	}
	var lease *Lease
	for {
		lease, err = n.leases.acquire(ctx, id)
		if err == nil {
			break
		}
		if !errors.Is(err, wire.ErrConflict) || !n.heldByEarlierSelf(ctx, id) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(n.f.timing.Renew):
		}
	}
	pctx, stop := context.WithCancel(n.ctx)
	c := &Claim{n: n, lease: lease, stopPub: stop, pubDone: make(chan struct{})}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		stop()
		lease.Release(context.Background())
		return nil, wire.Errorf(wire.CodeUnavailable, "the supervisor is leaving the fleet")
	}
	n.claims[id] = c
	n.mu.Unlock()
	n.orphans.heldHere(id)
	// Tests read this line (and "claim released") to check that no
	// session was ever live on two nodes at once.
	n.log.Info("fleet: claim taken", zap.String("session", id), zap.Uint64("fence", lease.Fence()))
	n.spawn(func() {
		defer close(c.pubDone)
		newPublisher(n.f, id, lease.Fence(), n.local, n.log).run(pctx, true)
	})
	n.spawn(func() { n.watchClaim(c) })
	return c, nil
}

// heldByEarlierSelf reports whether session id's lease names this node
// but an earlier instance of it.
func (n *Node) heldByEarlierSelf(ctx context.Context, id string) bool {
	v, _, err := n.leases.current(ctx, id)
	return err == nil && v != nil && v.Node == n.cfg.Node && v.Instance != n.instance
}

// watchClaim stops the session's runner when its lease is lost.
func (n *Node) watchClaim(c *Claim) {
	select {
	case <-c.lease.Lost():
	case <-n.ctx.Done():
		return
	}
	if errors.Is(c.lease.Err(), errReleased) {
		return
	}
	// Nothing more goes to the replica from here: the next holder copies
	// what the log holds beyond it.
	c.stopPub()
	n.orphans.lostHere(c.lease.Session())
	n.local.StopRunner(c.lease.Session(), c.lease.Deadline())
}

// Release gives the claim up once the session's runner is gone: the rest
// of its events are copied to the replica, then its lease is released.
// It does not wait for that.
func (c *Claim) Release() {
	c.once.Do(func() {
		n := c.n
		id := c.lease.Session()
		n.log.Info("fleet: claim released", zap.String("session", id), zap.Uint64("fence", c.lease.Fence()))
		done := make(chan struct{})
		n.mu.Lock()
		if n.claims[id] == c {
			delete(n.claims, id)
		}
		n.releases[id] = done
		n.mu.Unlock()
		n.spawn(func() {
			defer func() {
				n.mu.Lock()
				if n.releases[id] == done {
					delete(n.releases, id)
				}
				n.mu.Unlock()
				close(done)
			}()
			c.stopPub()
			<-c.pubDone
			if c.lease.Err() == nil {
				// Still ours: the replica gets the log's end first.
				ctx, cancel := context.WithTimeout(n.ctx, c.lease.k.f.timing.stopAfter())
				newPublisher(n.f, id, c.lease.Fence(), n.local, n.log).run(ctx, false)
				cancel()
			}
			c.lease.Release(context.Background())
		})
	})
}

// Close leaves the fleet: the caller has stopped every runner (and
// released their claims); the node's registration is removed and its
// background work stopped.
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	var waits []chan struct{}
	for _, ch := range n.releases {
		waits = append(waits, ch)
	}
	n.mu.Unlock()
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	n.rpc.close()
	n.leases.releaseAll(ctx)
	n.stop()
	return nil
}

func (n *Node) stop() {
	n.cancel()
	n.wg.Wait()
}
