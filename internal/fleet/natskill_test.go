package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
)

func TestKilledNATSServerLosesNothing(t *testing.T) {
	c := fleettest.StartCluster(t, 3)
	fleet := newFleetName()
	hist, store := newHistory(), newStorage("shared")
	urls := c.URLs()
	// Leases outlive the election of new leaders for what the dead server
	// led (4 to 9 s, longer on a loaded machine), as they do at the
	// default TTL (docs/fleet.md): the nodes keep their sessions.
	timing := Timing{LeaseTTL: 30 * time.Second, Request: 5 * time.Second}.WithDefaults()
	a := joinNodeWith(t, fleet, "a", store, hist, nil, nil, timing, urls...)
	b := joinNodeWith(t, fleet, "b", store, hist, nil, nil, timing, urls[2], urls[1], urls[0])
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("n%d", i)
		ids = append(ids, id)
		a.create(t, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// b follows every session's events through the replica.
	type seen struct {
		last int64
		err  error
	}
	results := make(chan seen, len(ids))
	const total = 3000
	for _, id := range ids {
		s, err := b.Replay(ctx, id, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer s.Close()
			var r seen
			for r.last < total {
				ev, err := s.Next(ctx)
				if err != nil {
					r.err = err
					break
				}
				if ev.Seq != r.last+1 {
					r.err = fmt.Errorf("%s: seq %d after %d", id, ev.Seq, r.last)
					break
				}
				r.last = ev.Seq
			}
			results <- r
		}()
	}
	info, err := a.f.events.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := info.Cluster.Leader
	for seq := int64(100); seq <= total; seq += 100 {
		for _, id := range ids {
			store.log.add(id, seq, 200)
		}
		if seq == 1000 {
			for _, s := range c.Servers {
				if s.Name == leader {
					t.Logf("killing %s, the event stream's leader", s.Name)
					s.Kill()
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // events arrive over time
	}
	for range ids {
		r := <-results
		if r.err != nil || r.last != total {
			t.Fatalf("a follower on b read to seq %d: %v", r.last, r.err)
		}
	}
	for _, id := range ids {
		if hist.liveOn(id) != "a" {
			t.Fatalf("%s is live on %q after the server's death, want a", id, hist.liveOn(id))
		}
		checkGapless(t, replicaMessages(t, b.f, id), total)
	}
	hist.check(t)
}
