package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// A session is live on a node only while the node holds the session's
// lease: a key of the lease bucket naming the node, which the NATS servers
// remove LeaseTTL after its last renewal. The node renews every lease it
// holds every Renew with a compare-and-set on the key's revision, so a
// renewal fails once anyone else has written the key.
//
// The node keeps a local deadline for each lease on its monotonic clock:
// the send time of the last renewal the servers acknowledged, plus
// LeaseTTL - Margin. The servers stamp a renewal no earlier than it was
// sent, so the lease cannot expire for others before that deadline unless
// the servers' clocks disagree by more than Margin. StopBudget before the
// deadline the node starts to stop the session's runner, so the runner is
// gone before anyone else may take the session: a node cut off from the
// fabric gives its sessions up, it does not wait to be told.
// docs/fleet.md gives the arithmetic.

// leaseValue is what a lease key holds.
type leaseValue struct {
	Node     string `json:"node"`
	Instance string `json:"instance"`
	// Fence is the revision at which the node took the lease: the token
	// that tells this holding from every earlier and later one.
	Fence uint64 `json:"fence,omitempty"`
}

// Lease errors.
var (
	errLeaseGone     = errors.New("lease gone: it expired or another node took it")
	errLeaseDeadline = errors.New("lease not renewed in time: giving the session up before it can expire")
	errReleased      = errors.New("lease released")
)

// Lease is this node's hold on one session. The holder starts the
// session's runner only with a lease in hand, stops it as soon as Lost is
// closed, has it stopped before Deadline, and then calls Release.
type Lease struct {
	k       *leaseKeeper
	session string
	fence   uint64

	mu       sync.Mutex
	rev      uint64    // the key's revision after the last renewal
	deadline time.Time // local: the runner must be gone by then
	timer    *time.Timer
	inFlight bool // a renewal is on its way
	lost     chan struct{}
	why      error
}

// Session is the session the lease holds.
func (l *Lease) Session() string { return l.session }

// Fence is the lease's fencing token: the revision of the key when this
// node took it. A later holding of the session has a greater one.
func (l *Lease) Fence() uint64 { return l.fence }

// Lost is closed when the holder must stop the session's runner: the
// lease is gone, or its deadline is StopBudget away.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Deadline is when, by this machine's monotonic clock, the session's
// runner must be gone.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Err says why the lease was lost, or nil while it holds.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.why
}

// Release gives the lease back once the session's runner is gone: the key
// is deleted (when it is still this holding's), so another node may take
// the session at once instead of after LeaseTTL.
func (l *Lease) Release(ctx context.Context) {
	l.mu.Lock()
	rev := l.rev
	l.loseLocked(errReleased)
	l.mu.Unlock()
	l.k.forget(l)
	defer l.k.released(l.session)
	// Deleting at this holding's revision only: a key someone else wrote
	// since, or that expired, is left alone.
	ctx, cancel := context.WithTimeout(ctx, l.k.f.timing.Request)
	defer cancel()
	err := l.k.f.leases.Delete(ctx, l.session, jetstream.LastRevision(rev))
	if err != nil && !isRevisionMismatch(err) {
		l.k.log.Debug("lease release failed; it expires by itself", zap.String("session", l.session), zap.Error(err))
	}
}

// renewed records a renewal sent at sent and acknowledged at revision rev.
func (l *Lease) renewed(sent time.Time, rev uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.why != nil {
		return
	}
	l.rev = rev
	l.deadline = sent.Add(l.k.f.timing.holdFor())
	l.timer.Reset(time.Until(sent.Add(l.k.f.timing.stopAfter())))
}

// adopt moves the lease from revision from to rev, a renewal of its own
// that was written after the node stopped waiting for it. The deadline
// does not move: that renewal's send time is not known here.
func (l *Lease) adopt(from, rev uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.why == nil && l.rev == from {
		l.rev = rev
	}
}

// settled records that the renewal in flight is answered or given up.
func (l *Lease) settled() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight = false
}

func (l *Lease) lose(why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loseLocked(why)
}

func (l *Lease) loseLocked(why error) {
	if l.why != nil {
		return
	}
	l.why = why
	l.timer.Stop()
	close(l.lost)
	if !errors.Is(why, errReleased) {
		l.k.log.Warn("lease lost: stopping the session here", zap.String("session", l.session), zap.Error(why))
	}
}

// leaseKeeper takes, renews and releases this node's leases.
type leaseKeeper struct {
	f        *Fabric
	node     string
	instance string
	log      *zap.Logger
	// onTaken, when set, hears of every lease taken (tests keep the
	// history of holders with it).
	onTaken func(l *Lease)

	mu     sync.Mutex
	held   map[string]*Lease
	taking map[string]bool // being acquired: not yet in held
	// releasing are sessions whose key a Release is deleting: the key
	// still names this node, but it is the old holding's.
	releasing map[string]bool
}

func newLeaseKeeper(f *Fabric, node, instance string, log *zap.Logger) *leaseKeeper {
	return &leaseKeeper{f: f, node: node, instance: instance, log: log, held: map[string]*Lease{}, taking: map[string]bool{}, releasing: map[string]bool{}}
}

// acquire takes session's lease. It fails with conflict when another
// holding is on the key, naming its node.
func (k *leaseKeeper) acquire(ctx context.Context, session string) (*Lease, error) {
	k.mu.Lock()
	if k.held[session] != nil || k.taking[session] {
		k.mu.Unlock()
		return nil, wire.Errorf(wire.CodeConflict, "session %s: this node already holds its lease", session)
	}
	k.taking[session] = true
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.taking, session)
		k.mu.Unlock()
	}()
	raw, err := json.Marshal(leaseValue{Node: k.node, Instance: k.instance})
	if err != nil {
		return nil, err
	}
	// The deadline counts from the first attempt's send: a later attempt
	// only moves the servers' stamp later.
	sent := time.Now()
	var rev uint64
	err = k.f.retry(ctx, func(ctx context.Context) error {
		if k.isReleasing(session) {
			// The last holding's key is on its way out: wait for it
			// rather than take it for this one's.
			return errTryAgain
		}
		var err error
		rev, err = k.f.create(ctx, k.f.names.leasesBucket(), session, raw)
		if errors.Is(err, jetstream.ErrKeyExists) {
			v, cur, gerr := k.current(ctx, session)
			switch {
			case gerr != nil:
			case v == nil:
				// Gone since: expired or released meanwhile.
				err = errTryAgain
			case v.Node == k.node && v.Instance == k.instance && !k.isReleasing(session):
				// An attempt that timed out was written after all: no
				// other holding of this node's can be on the key, as
				// none is held, being taken or being released.
				rev, err = cur, nil
			}
		}
		return err
	})
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			holder := "another node"
			if v, _, gerr := k.current(ctx, session); gerr == nil && v != nil {
				holder = "node " + v.Node
			}
			return nil, wire.Errorf(wire.CodeConflict, "session %s is live on %s", session, holder)
		}
		return nil, wire.Errorf(wire.CodeUnavailable, "take the lease of session %s: %v", session, err)
	}
	l := &Lease{k: k, session: session, fence: rev, rev: rev, lost: make(chan struct{})}
	// Taking the lease may have outlasted its stop time (a loaded machine):
	// the timer then fires at once, and must find it whole.
	l.mu.Lock()
	l.deadline = sent.Add(k.f.timing.holdFor())
	l.timer = time.AfterFunc(time.Until(sent.Add(k.f.timing.stopAfter())), func() { l.lose(errLeaseDeadline) })
	l.mu.Unlock()
	k.mu.Lock()
	k.held[session] = l
	k.mu.Unlock()
	if k.onTaken != nil {
		k.onTaken(l)
	}
	// The first renewal writes the fence into the value, so a reader of
	// the key knows which holding it sees.
	return l, nil
}

// current reads session's lease key: its value and revision, nil when
// there is none.
func (k *leaseKeeper) current(ctx context.Context, session string) (*leaseValue, uint64, error) {
	raw, rev, err := k.f.latest(ctx, k.f.names.leasesBucket(), session)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var v leaseValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, 0, fmt.Errorf("lease of %s: %w", session, err)
	}
	if v.Fence == 0 {
		v.Fence = rev
	}
	return &v, rev, nil
}

// forget drops l, which Release is deleting the key of.
func (k *leaseKeeper) forget(l *Lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held[l.session] == l {
		delete(k.held, l.session)
	}
	k.releasing[l.session] = true
}

// released records that Release is done with session's key.
func (k *leaseKeeper) released(session string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.releasing, session)
}

func (k *leaseKeeper) isReleasing(session string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.releasing[session]
}

// run renews every held lease every Renew until ctx ends.
func (k *leaseKeeper) run(ctx context.Context) {
	t := time.NewTicker(k.f.timing.Renew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k.renewAll(ctx)
	}
}

// renewAll sends a renewal of every held lease that has none in flight,
// all at once, so a node holding many leases spends one round trip on
// them, and returns without waiting for the answers: a renewal answered
// late (a loaded machine, a NATS leader election) still counts from its
// send time when its answer comes, and the next round leaves its lease
// alone until then. The channel returned is closed once every renewal
// sent is answered or given up.
func (k *leaseKeeper) renewAll(ctx context.Context) <-chan struct{} {
	k.mu.Lock()
	leases := make([]*Lease, 0, len(k.held))
	for _, l := range k.held {
		leases = append(leases, l)
	}
	k.mu.Unlock()
	subjectPrefix := "$KV." + k.f.names.leasesBucket() + "."
	var wg sync.WaitGroup
	for _, l := range leases {
		l.mu.Lock()
		rev, skip := l.rev, l.why != nil || l.inFlight
		if !skip {
			l.inFlight = true
		}
		l.mu.Unlock()
		if skip {
			continue
		}
		raw, _ := json.Marshal(leaseValue{Node: k.node, Instance: k.instance, Fence: l.fence})
		msg := &nats.Msg{Subject: subjectPrefix + l.session, Data: raw, Header: nats.Header{}}
		sent := time.Now()
		fut, err := k.f.js.PublishMsgAsync(msg, jetstream.WithExpectLastSequencePerSubject(rev))
		if err != nil {
			l.settled()
			k.log.Debug("lease renewal not sent", zap.String("session", l.session), zap.Error(err))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.await(ctx, l, rev, sent, fut)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// await takes the answer to one renewal of l, sent at sent on the key's
// revision rev.
func (k *leaseKeeper) await(ctx context.Context, l *Lease, rev uint64, sent time.Time, fut jetstream.PubAckFuture) {
	defer l.settled()
	// A renewal whose answer never comes (its server died with it) is
	// given up after two renewal periods, so that the next one can go
	// out; should it have been written after all, the next renewal finds
	// the key moved and mismatch sorts it out.
	giveUp := time.NewTimer(2 * k.f.timing.Renew)
	defer giveUp.Stop()
	select {
	case ack := <-fut.Ok():
		l.renewed(sent, ack.Sequence)
	case err := <-fut.Err():
		if isRevisionMismatch(err) {
			k.mismatch(ctx, l, rev, err)
		} else {
			k.log.Debug("lease renewal failed", zap.String("session", l.session), zap.Error(err))
		}
	case <-giveUp.C:
		k.log.Debug("lease renewal unanswered; the next one goes out", zap.String("session", l.session))
	case <-l.lost:
	case <-ctx.Done():
	}
}

// mismatch handles a renewal refused because the key is no longer at the
// revision rev this node last saw. When the key still holds this holding's
// value (this node, this instance, this fence), the write that moved it was
// one of this holding's own renewals answered too late to be counted:
// nobody else writes that value, and another node can only create the key
// once it is gone, so the node carries on from the key's revision (its
// deadline stays where the last counted renewal put it). Anything else
// means the lease is gone.
func (k *leaseKeeper) mismatch(ctx context.Context, l *Lease, rev uint64, refusal error) {
	ctx, cancel := context.WithTimeout(ctx, k.f.timing.Request)
	defer cancel()
	v, cur, err := k.current(ctx, l.session)
	if err != nil {
		// Unknown: the next renewal asks again, and the deadline holds
		// meanwhile.
		k.log.Debug("lease renewal refused and the key unreadable", zap.String("session", l.session), zap.Error(err))
		return
	}
	if v != nil && v.Node == k.node && v.Instance == k.instance && v.Fence == l.fence && cur > rev {
		l.adopt(rev, cur)
		return
	}
	l.lose(fmt.Errorf("%w (%v)", errLeaseGone, refusal))
}

// sweep deletes a lease key that names this instance but that it does not
// hold: a renewal the servers acknowledged after the node had given the
// session up (the acknowledgement lost in a cut) would otherwise keep
// everyone off the session until it expires.
func (k *leaseKeeper) sweep(ctx context.Context, session string, rev uint64) {
	k.mu.Lock()
	busy := k.held[session] != nil || k.taking[session] || k.releasing[session]
	k.mu.Unlock()
	if busy {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, k.f.timing.Request)
	defer cancel()
	if err := k.f.leases.Delete(ctx, session, jetstream.LastRevision(rev)); err == nil {
		k.log.Info("removed a lease this node no longer holds", zap.String("session", session))
	}
}

// releaseAll gives up every held lease (the holder has stopped every
// runner): used when the node leaves the fleet.
func (k *leaseKeeper) releaseAll(ctx context.Context) {
	k.mu.Lock()
	leases := make([]*Lease, 0, len(k.held))
	for _, l := range k.held {
		leases = append(leases, l)
	}
	k.mu.Unlock()
	for _, l := range leases {
		l.Release(ctx)
	}
}
