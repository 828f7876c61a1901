package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
)

// BenchmarkReplicaToAnotherNode measures how fast a session's events reach
// a follower on another node: the owner copies a log of 200-byte events
// into the replica (connected to one server) while a follower on another
// node (connected to another server) reads them. Beside it, the same
// follower reading the log where it is, which is what a shell on the owner
// gets.
//
//	go test -run '^$' -bench ReplicaToAnotherNode -benchtime 3x ./internal/fleet/
func BenchmarkReplicaToAnotherNode(b *testing.B) {
	const events = 200_000
	c := fleettest.Shared(b)
	log := newMemLog()
	log.add("s", events, 200)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	b.Run("local-log", func(b *testing.B) {
		for b.Loop() {
			s, _ := log.Events(ctx, "s", 1, false)
			n := len(readAll(b, s))
			if n != events {
				b.Fatalf("read %d", n)
			}
		}
		b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("replica", func(b *testing.B) {
		for b.Loop() {
			fleet := newFleetName()
			owner := openFabric(b, connect(b, c.Servers[0].URL()), fleet)
			front := openFabric(b, connect(b, c.Servers[1].URL()), fleet)
			s, err := front.Replay(ctx, "s", 1, true)
			if err != nil {
				b.Fatal(err)
			}
			pctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				newPublisher(owner, "s", 1, log, testLogger(b)).run(pctx, true)
			}()
			for seq := int64(1); seq <= events; seq++ {
				ev, err := s.Next(ctx)
				if err != nil || ev.Seq != seq {
					b.Fatalf("at %d: %d, %v", seq, ev.Seq, err)
				}
			}
			stop()
			<-done
			s.Close()
		}
		b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkRequestToAnotherNode measures the round trip of a small request
// to another node, as a command routed to a session's owner makes it, and
// reports its percentiles.
//
//	go test -run '^$' -bench RequestToAnotherNode ./internal/fleet/
func BenchmarkRequestToAnotherNode(b *testing.B) {
	c := fleettest.Shared(b)
	fleet := newFleetName()
	hist, store := newHistory(), newStorage("shared")
	type status struct {
		Session string `json:"session"`
		State   string `json:"state"`
	}
	handlers := map[string]Handler{"status": func(ctx context.Context, req []byte) (any, error) {
		var r status
		if err := json.Unmarshal(req, &r); err != nil {
			return nil, err
		}
		return status{Session: r.Session, State: "idle"}, nil
	}}
	front := joinNodeWith(b, fleet, "front", store, hist, nil, nil, testTiming(), c.Servers[0].URL())
	joinNodeWith(b, fleet, "owner", store, hist, nil, handlers, testTiming(), c.Servers[1].URL())
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		var r status
		if err := front.Call(ctx, "owner", "status", status{Session: "s1"}, &r); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkLeaseRenewal measures one round of lease renewals of a node
// holding 1,000 sessions: every renewal goes out at once and the round
// ends when every one is acknowledged (docs/scaling.md).
//
//	go test -run '^$' -bench LeaseRenewal -benchtime 10x ./internal/fleet/
func BenchmarkLeaseRenewal(b *testing.B) {
	const leases = 1000
	c := fleettest.Shared(b)
	f := openFabric(b, connect(b, c.Servers[0].URL()), newFleetName())
	k := newLeaseKeeper(f, "n1", "i1", testLogger(b))
	ctx := context.Background()
	for i := range leases {
		if _, err := k.acquire(ctx, fmt.Sprintf("s%04d", i)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		<-k.renewAll(ctx)
	}
	for _, l := range k.held {
		if l.Err() != nil {
			b.Fatalf("lease %s lost: %v", l.session, l.Err())
		}
	}
	b.ReportMetric(float64(leases)*float64(b.N)/b.Elapsed().Seconds(), "renewals/s")
	k.releaseAll(ctx)
}

// BenchmarkReplicaManySessions measures the replica's intake when many
// sessions each append an event now and then, so that every event is a
// message of its own: 1,000 sessions' publishers, one event each per
// round (docs/scaling.md).
//
//	go test -run '^$' -bench ReplicaManySessions -benchtime 5x ./internal/fleet/
func BenchmarkReplicaManySessions(b *testing.B) {
	const sessions = 1000
	c := fleettest.Shared(b)
	f := openFabric(b, connect(b, c.Servers[0].URL()), newFleetName())
	log := newMemLog()
	pubs := make([]*publisher, sessions)
	for i := range pubs {
		pubs[i] = newPublisher(f, fmt.Sprintf("s%04d", i), 1, log, testLogger(b))
	}
	ctx := context.Background()
	round := int64(0)
	for b.Loop() {
		round++
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for i, p := range pubs {
			line := append(eventLine(round, 250), '\n')
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := p.publish(ctx, round, round, 0, 0, line); err != nil {
					b.Errorf("session %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(sessions)*float64(b.N)/b.Elapsed().Seconds(), "messages/s")
}
