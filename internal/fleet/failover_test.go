package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
)

// proxiesTo puts a proxy in front of every server of c.
func proxiesTo(t *testing.T, c *fleettest.Cluster) []*fleettest.Proxy {
	var out []*fleettest.Proxy
	for _, s := range c.Servers {
		out = append(out, fleettest.NewProxy(t, s.ClientAddr))
	}
	return out
}

func proxyURLs(ps []*fleettest.Proxy) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.URL())
	}
	return out
}

// waitRecords waits until every session's record satisfies ok.
func waitRecords(t *testing.T, n *testNode, ids []string, d time.Duration, what string, ok func(Record) bool) {
	t.Helper()
	eventually(t, d, what, func() bool {
		for _, id := range ids {
			rec, err := n.Record(context.Background(), id)
			if err != nil || !ok(rec) {
				return false
			}
		}
		return true
	})
}

func TestPartitionedNodeGivesItsSessionsUpBeforeAnyoneTakesThem(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	hist, store := newHistory(), newStorage("shared")
	proxies := proxiesTo(t, c)
	a := joinNode(t, fleet, "a", store, hist, nil, proxyURLs(proxies)...)
	b := joinNode(t, fleet, "b", store, hist, nil, c.Servers[1].URL())
	cc := joinNode(t, fleet, "c", store, hist, nil, c.Servers[2].URL())
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("p%02d", i)
		ids = append(ids, id)
		a.create(t, id)
	}
	// Some events the replica has not taken yet when the cut comes.
	for _, id := range ids {
		store.log.add(id, 50, 100)
	}
	cut := time.Now()
	for _, p := range proxies {
		p.Cut()
	}
	// a gives every session up on its own clock...
	eventually(t, testTiming().LeaseTTL, "a stops its runners", func() bool { return a.local.liveCount() == 0 })
	gaveUp := time.Since(cut)
	// ...and b and c take them over once the leases expired.
	waitRecords(t, b, ids, 30*time.Second, "the sessions move off a", func(r Record) bool { return r.Node != "a" && r.State == "" })
	eventually(t, 30*time.Second, "every session live again", func() bool {
		for _, id := range ids {
			if n := hist.liveOn(id); n != "b" && n != "c" {
				return false
			}
		}
		return true
	})
	t.Logf("a gave its sessions up %v after the cut; b has %d, c has %d", gaveUp, b.local.liveCount(), cc.local.liveCount())
	if b.local.liveCount() == 0 || cc.local.liveCount() == 0 {
		t.Errorf("the sessions were not spread: b %d, c %d", b.local.liveCount(), cc.local.liveCount())
	}
	// a comes back: its leases are gone, its sessions are not its own any
	// more, and it starts none of them.
	for _, p := range proxies {
		p.Heal()
	}
	eventually(t, 20*time.Second, "a back in the fleet", func() bool { return b.Alive("a") })
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := a.local.start(ctx, id)
		cancel()
		if err == nil {
			t.Fatalf("a started %s again after it moved", id)
		}
	}
	time.Sleep(2 * testTiming().Heartbeat) // a's reconciliation runs meanwhile
	if n := a.local.liveCount(); n != 0 {
		t.Fatalf("a runs %d sessions after coming back", n)
	}
	hist.check(t)
	// The replica holds every session's log, without gap or repetition.
	for _, id := range ids {
		eventually(t, 20*time.Second, "replica of "+id, func() bool {
			msgs := replicaMessages(t, b.f, id)
			return len(msgs) > 0 && msgs[len(msgs)-1][1] == 50
		})
		checkGapless(t, replicaMessages(t, b.f, id), 50)
	}
}

func TestKilledNodesLiveSessionsResumeElsewhereAndUnreachableOnesFail(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	hist := newHistory()
	shared, private := newStorage("shared"), newStorage("only-d")
	a := joinNode(t, fleet, "a", shared, hist, nil, c.Servers[0].URL())
	b := joinNode(t, fleet, "b", shared, hist, nil, c.Servers[1].URL())
	d := joinNode(t, fleet, "d", private, hist, nil, c.Servers[2].URL())
	var live, idle []string
	for i := range 10 {
		id := fmt.Sprintf("k%02d", i)
		a.create(t, id)
		shared.log.add(id, int64(20+i), 80)
		if i%2 == 0 {
			live = append(live, id)
		} else {
			idle = append(idle, id)
			a.local.stop(id)
		}
	}
	d.create(t, "dx")
	eventually(t, 10*time.Second, "the idle sessions' leases released", func() bool {
		for _, id := range idle {
			if b.orphans.holder(id) != nil {
				return false
			}
		}
		return true
	})
	a.kill()
	d.kill()

	waitRecords(t, b, append(append([]string{}, live...), idle...), 30*time.Second, "a's sessions taken by b",
		func(r Record) bool { return r.Node == "b" && r.State == "" && r.Moves == 1 })
	eventually(t, 20*time.Second, "a's live sessions live on b", func() bool {
		for _, id := range live {
			if hist.liveOn(id) != "b" {
				return false
			}
		}
		return true
	})
	for _, id := range idle {
		if n := hist.liveOn(id); n != "" {
			t.Fatalf("idle session %s was started on %s", id, n)
		}
	}
	waitRecords(t, b, []string{"dx"}, 30*time.Second, "d's session failed", func(r Record) bool {
		return r.State == StateFailed && r.Lost != nil && r.Lost.WasLive
	})
	rec, _ := b.Record(context.Background(), "dx")
	t.Logf("dx: %s", rec.Lost.Error)
	hist.check(t)
	// Every event of the live sessions, published by a or not, is in the
	// replica once b runs them.
	for i, id := range live {
		last := int64(20 + 2*i)
		eventually(t, 20*time.Second, "replica of "+id, func() bool {
			msgs := replicaMessages(t, b.f, id)
			return len(msgs) > 0 && msgs[len(msgs)-1][1] == last
		})
		checkGapless(t, replicaMessages(t, b.f, id), last)
	}
	// d's storage comes back with a node on it: the session resumes there.
	e := joinNode(t, fleet, "e", private, hist, nil, c.Servers[0].URL())
	waitRecords(t, b, []string{"dx"}, 30*time.Second, "d's session taken by e", func(r Record) bool { return r.Node == "e" && r.State == "" })
	eventually(t, 20*time.Second, "dx live on e", func() bool { return hist.liveOn("dx") == "e" })
	_ = e
}
