package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// When a node leaves the fleet (its registration expires: a crash, a cut
// link, a stop) the sessions it held lose their node. Every node sees it
// and runs the same reconciliation over the catalog:
//
//   - A session whose node is gone is marked orphaned once its lease is
//     gone too (it expires LeaseTTL after the last renewal), noting
//     whether it was live (its lease expired rather than being released).
//   - An orphaned session is taken by one node on its storage, the same
//     one on every node's reckoning (rendezvous hashing over the session
//     id), which rewrites its record and, if it was live, resumes it. If
//     that node does not within two NodeTTLs, any node on the storage may.
//   - A session no node on its storage can take is marked failed, with an
//     error that says so; it is taken as soon as such a node joins.
//
// A node that gave up its own live sessions when cut off resumes them when
// it can renew again, if they are still its own.

type leaseHolder struct {
	node, instance string
	rev            uint64
}

type orphans struct {
	n *Node

	mu      sync.Mutex
	holders map[string]leaseHolder // live leases by session
	expired map[string]leaseHolder // sessions whose lease expired, by last holder
	lost    map[string]bool        // own sessions given up while live
	busy    map[string]bool        // sessions being taken or resumed here
	kick    chan struct{}
}

func newOrphans(n *Node) *orphans {
	return &orphans{
		n:       n,
		holders: map[string]leaseHolder{}, expired: map[string]leaseHolder{},
		lost: map[string]bool{}, busy: map[string]bool{},
		kick: make(chan struct{}, 1),
	}
}

// watchLeases follows the lease bucket: who holds what, and which leases
// expired rather than being released.
func (o *orphans) watchLeases(ctx context.Context, ready chan<- struct{}) error {
	return watchBucket(ctx, o.n.f.leases, "leases", ready, o.applyLease)
}

func (o *orphans) applyLease(e jetstream.KeyValueEntry) {
	if !validToken(e.Key()) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	id := e.Key()
	switch e.Operation() {
	case jetstream.KeyValuePut:
		var v leaseValue
		if json.Unmarshal(e.Value(), &v) == nil {
			o.holders[id] = leaseHolder{v.Node, v.Instance, e.Revision()}
			delete(o.expired, id)
		}
	case jetstream.KeyValuePurge: // the servers removed it: it expired
		if h, ok := o.holders[id]; ok {
			o.expired[id] = h
			if h.node == o.n.cfg.Node && h.instance != o.n.instance {
				// Live on this node's earlier run, which died with its
				// runners: this run resumes it.
				o.lost[id] = true
			}
		}
		delete(o.holders, id)
		o.poke()
	default: // released
		delete(o.holders, id)
		delete(o.expired, id)
	}
}

func (o *orphans) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// lostHere notes an own session given up while live.
func (o *orphans) lostHere(id string) {
	o.mu.Lock()
	o.lost[id] = true
	o.mu.Unlock()
	o.poke()
}

// heldHere notes that this node took session id's lease: it is live here.
func (o *orphans) heldHere(id string) {
	o.mu.Lock()
	delete(o.lost, id)
	o.mu.Unlock()
}

// run reconciles at every heartbeat and whenever the nodes change.
func (o *orphans) run(ctx context.Context) {
	t := time.NewTicker(o.n.f.timing.Heartbeat)
	defer t.Stop()
	for {
		o.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.kick:
		case <-o.n.reg.changes():
		}
	}
}

func (o *orphans) reconcile(ctx context.Context) {
	me := o.n.cfg.Node
	o.mu.Lock()
	var stale map[string]uint64
	for id, h := range o.holders {
		if h.node == me && h.instance == o.n.instance {
			if stale == nil {
				stale = map[string]uint64{}
			}
			stale[id] = h.rev
		}
	}
	o.mu.Unlock()
	for id, rev := range stale {
		o.n.leases.sweep(ctx, id, rev)
	}
	for _, e := range o.n.catalog.all() {
		rec := e.rec
		_, alive := o.n.reg.get(rec.Node)
		switch {
		case rec.State == "" && alive:
			if rec.Node == me && o.take(rec.ID, true) {
				o.n.spawn(func() { o.resumeOwn(ctx, rec.ID) })
			}
		case rec.State == "":
			o.markOrphaned(ctx, e)
		default:
			o.settle(ctx, e)
		}
	}
}

// take marks id busy here; with ownLost, only an own session given up
// while live.
func (o *orphans) take(id string, ownLost bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.busy[id] || (ownLost && !o.lost[id]) {
		return false
	}
	o.busy[id] = true
	return true
}

func (o *orphans) done(id string, resumed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.busy, id)
	if resumed {
		delete(o.lost, id)
	}
}

// resumeOwn starts again an own session given up while cut off, once its
// lease is free.
func (o *orphans) resumeOwn(ctx context.Context, id string) {
	ok := o.resume(ctx, id)
	o.done(id, ok)
}

func (o *orphans) resume(ctx context.Context, id string) bool {
	if o.holder(id) != nil {
		return false // the old lease has not expired yet
	}
	rctx, cancel := context.WithTimeout(ctx, o.n.f.timing.LeaseTTL+o.n.f.timing.Request)
	defer cancel()
	if err := o.n.local.Resume(rctx, id); err != nil {
		o.n.log.Warn("session not resumed", zap.String("session", id), zap.Error(err))
		return false
	}
	o.n.log.Info("session resumed", zap.String("session", id))
	return true
}

func (o *orphans) holder(id string) *leaseHolder {
	o.mu.Lock()
	defer o.mu.Unlock()
	if h, ok := o.holders[id]; ok {
		return &h
	}
	return nil
}

// markOrphaned marks a session whose node left, once its lease is gone.
func (o *orphans) markOrphaned(ctx context.Context, e catalogEntry) {
	rec := e.rec
	o.mu.Lock()
	h, held := o.holders[rec.ID]
	exp, expired := o.expired[rec.ID]
	o.mu.Unlock()
	if held && h.node == rec.Node {
		return // its lease has not expired yet
	}
	rec.State = StateOrphaned
	rec.Lost = &Loss{From: rec.Node, At: time.Now().UTC(), WasLive: expired && exp.node == rec.Node}
	if _, err := o.n.catalog.update(ctx, rec, e.rev); err == nil {
		o.n.log.Info("session orphaned: its node left the fleet", zap.String("session", rec.ID),
			zap.String("from", rec.Node), zap.Bool("wasLive", rec.Lost.WasLive))
	}
}

// settle takes an orphaned or failed session, or marks it failed when no
// node on its storage is in the fleet.
func (o *orphans) settle(ctx context.Context, e catalogEntry) {
	rec := e.rec
	me := o.n.cfg.Node
	var candidates []string
	for _, info := range o.n.reg.list() {
		if info.Storage == rec.Storage {
			candidates = append(candidates, info.Name)
		}
	}
	if len(candidates) == 0 {
		if rec.State == StateFailed {
			return
		}
		rec.State = StateFailed
		if rec.Lost == nil {
			rec.Lost = &Loss{From: rec.Node, At: time.Now().UTC()}
		}
		rec.Lost.Error = fmt.Sprintf("session %s lost its node %s, and no node in the fleet reaches its folder (storage %q): it resumes when a node on that storage joins",
			rec.ID, rec.Lost.From, rec.Storage)
		if _, err := o.n.catalog.update(ctx, rec, e.rev); err == nil {
			o.n.log.Warn("session failed: no node reaches its folder", zap.String("session", rec.ID), zap.String("storage", rec.Storage))
		}
		return
	}
	chosen := rendezvous(rec.ID, candidates)
	overdue := rec.Lost != nil && time.Since(rec.Lost.At) > 2*o.n.f.timing.NodeTTL
	if chosen != me && !(overdue && contains(candidates, me)) {
		return
	}
	if !o.take(rec.ID, false) {
		return
	}
	o.n.spawn(func() {
		resumed := o.adopt(ctx, e)
		o.done(rec.ID, resumed)
	})
}

// adopt makes an orphaned session this node's, and resumes it if it was
// live.
func (o *orphans) adopt(ctx context.Context, e catalogEntry) bool {
	rec := e.rec
	if !o.n.local.Reachable(rec.ID) {
		o.n.log.Warn("cannot take an orphaned session: its folder is not here although the storage is named alike",
			zap.String("session", rec.ID), zap.String("storage", rec.Storage))
		return false
	}
	if h := o.holder(rec.ID); h != nil {
		return false // someone holds it: it is not orphaned any more
	}
	from := rec.Node
	if rec.Lost != nil {
		from = rec.Lost.From
	}
	wasLive := rec.Lost != nil && rec.Lost.WasLive
	rec.Node = o.n.cfg.Node
	rec.State, rec.Lost = "", nil
	rec.Moves++
	rec.Placement = Placement{Node: rec.Node, Reason: fmt.Sprintf("taken over from node %s, which left the fleet", from)}
	if _, err := o.n.catalog.update(ctx, rec, e.rev); err != nil {
		return false // another node took it first
	}
	o.n.log.Info("took over a session from a node that left", zap.String("session", rec.ID), zap.String("from", from), zap.Bool("resume", wasLive))
	if !wasLive {
		return true
	}
	if !o.resume(ctx, rec.ID) {
		// Tried again at the next reconciliation, as an own lost session.
		o.mu.Lock()
		o.lost[rec.ID] = true
		o.mu.Unlock()
		return false
	}
	return true
}

// rendezvous picks the node with the highest hash of (session, node): all
// nodes agree without talking, and a node's leaving moves only its own
// share.
func rendezvous(session string, nodes []string) string {
	var best string
	var bestScore uint64
	for _, n := range nodes {
		h := fnv.New64a()
		h.Write([]byte(session))
		h.Write([]byte{0})
		h.Write([]byte(n))
		if s := h.Sum64(); best == "" || s > bestScore {
			best, bestScore = n, s
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
