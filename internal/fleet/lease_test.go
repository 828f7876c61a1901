package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
)

// TestLeaseRenewalsAnsweredLate covers what a loaded machine or a NATS
// leader election does to renewals: the key moves by a renewal of the
// node's own that it stopped waiting for. The node carries on from there;
// a key written by anyone else is a lost lease.
func TestLeaseRenewalsAnsweredLate(t *testing.T) {
	c := fleettest.Shared(t)
	f := openFabric(t, connect(t, c.Servers[0].URL()), newFleetName())
	k := newLeaseKeeper(f, "n1", "i1", testLogger(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// put writes v on the lease key as a renewal does: on the revision
	// the lease last saw, which the writer no longer learns.
	put := func(l *Lease, v leaseValue) {
		t.Helper()
		l.mu.Lock()
		rev := l.rev
		l.mu.Unlock()
		raw, _ := json.Marshal(v)
		if _, err := f.leases.Update(ctx, l.session, raw, rev); err != nil {
			t.Fatal(err)
		}
	}
	renew := func() {
		t.Helper()
		select {
		case <-k.renewAll(ctx):
		case <-ctx.Done():
			t.Fatal("renewals unanswered")
		}
	}

	tests := []struct {
		name     string
		write    func(l *Lease) leaseValue
		wantLost bool
	}{
		{name: "its own renewal, written late", write: func(l *Lease) leaseValue {
			return leaseValue{Node: "n1", Instance: "i1", Fence: l.fence}
		}},
		{name: "another instance of the node", write: func(l *Lease) leaseValue {
			return leaseValue{Node: "n1", Instance: "i2", Fence: l.fence}
		}, wantLost: true},
		{name: "another node", write: func(l *Lease) leaseValue {
			return leaseValue{Node: "n2", Instance: "i9", Fence: l.fence}
		}, wantLost: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := k.acquire(ctx, "s"+string(rune('a'+i)))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			renew()
			before := l.Deadline()
			put(l, tt.write(l))
			renew() // refused: the key moved
			if lost := l.Err() != nil; lost != tt.wantLost {
				t.Fatalf("lost %v (%v), want lost %v", lost, l.Err(), tt.wantLost)
			}
			if tt.wantLost {
				if !errors.Is(l.Err(), errLeaseGone) {
					t.Fatalf("lost with %v", l.Err())
				}
				return
			}
			if !l.Deadline().Equal(before) {
				t.Fatal("a renewal whose send time is unknown moved the deadline")
			}
			renew() // from the adopted revision
			if l.Err() != nil || !l.Deadline().After(before) {
				t.Fatalf("after adopting the key's revision: err %v, deadline moved %v", l.Err(), l.Deadline().After(before))
			}
			_, rev, err := f.latest(ctx, f.names.leasesBucket(), l.session)
			if err != nil {
				t.Fatal(err)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.rev != rev {
				t.Fatalf("lease at revision %d, key at %d", l.rev, rev)
			}
		})
	}
}
