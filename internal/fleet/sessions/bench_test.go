package sessions_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
)

// p50 is the median of ds.
func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkCommandThroughAnotherNode measures, side by side in one run, a
// status command on a live session sent to the node that owns it and to
// another node, which routes it to the owner over NATS: each iteration is
// a round of 400 of each, interleaved with the order alternating, and the
// figures are the medians over the rounds (docs/performance.md).
//
//	go test -run '^$' -bench CommandThroughAnotherNode -benchtime 5x ./internal/fleet/sessions/
func BenchmarkCommandThroughAnotherNode(b *testing.B) {
	f := startFleet(b, fleetOptions{nodes: 2})
	s := f.create(0, 0)
	f.turn(s.ID, 0, 0, 1, "hi")
	ctx := ctxFor(b)
	status := func(i int) time.Duration {
		start := time.Now()
		if _, err := f.c(i).Command(ctx, s.ID, command.GetStatus{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range 50 { // both paths warm
		status(0)
		status(1)
	}
	var owners, others, diffs []time.Duration
	for b.Loop() {
		var owner, other []time.Duration
		for i := range 400 {
			if i%2 == 0 {
				owner = append(owner, status(0))
				other = append(other, status(1))
			} else {
				other = append(other, status(1))
				owner = append(owner, status(0))
			}
		}
		owners, others = append(owners, p50(owner)), append(others, p50(other))
		diffs = append(diffs, p50(other)-p50(owner))
	}
	b.ReportMetric(float64(p50(owners).Microseconds()), "owner-p50-µs")
	b.ReportMetric(float64(p50(others).Microseconds()), "other-p50-µs")
	b.ReportMetric(float64(p50(diffs).Microseconds()), "extra-p50-µs")
}

// BenchmarkEventsToAnotherNode measures how fast events reach a subscriber
// on another node: a session's log gets a tail of 200,000 events of 200
// bytes while its node is down; when the session goes live again its owner
// copies them into the replica, and a client of another node, following
// the session over HTTP (NDJSON), reads them as they come. Beside it, in
// the same run, the same client reading the same events through the owner,
// from its file. The rate counts from the first event read to the last.
//
//	go test -run '^$' -bench EventsToAnotherNode -benchtime 1x ./internal/fleet/sessions/
func BenchmarkEventsToAnotherNode(b *testing.B) {
	const events = 200_000
	f := startFleet(b, fleetOptions{nodes: 2})
	ctx := ctxFor(b)
	read := func(via int, id string, from int64) time.Duration {
		st, err := f.c(via).Events(ctx, id, client.EventsOptions{From: from, Follow: true})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		var start time.Time
		for n := range events {
			if _, err := st.Next(); err != nil {
				b.Fatalf("after %d events: %v", n, err)
			}
			if n == 0 {
				start = time.Now()
			}
		}
		return time.Since(start)
	}
	var other, own []float64
	for b.Loop() {
		s := f.create(0, 0)
		f.turn(s.ID, 0, 0, 1, "hi")
		before := int64(len(f.readAll(0, s.ID)))
		f.nodes[0].Stop()
		appendEvents(b, filepath.Join(f.storage, "sessions", s.ID, "events.jsonl"), before+1, events)
		f.nodes[0].Restart()
		done := make(chan time.Duration)
		go func() { done <- read(1, s.ID, before+1) }()
		time.Sleep(500 * time.Millisecond) // the subscriber waits
		if _, err := f.c(0).Command(ctx, s.ID, command.Send{Text: "wake"}); err != nil {
			b.Fatal(err)
		}
		other = append(other, events/(<-done).Seconds())
		own = append(own, events/read(0, s.ID, before+1).Seconds())
	}
	sort.Float64s(other)
	sort.Float64s(own)
	b.ReportMetric(other[len(other)/2], "events/s-other-node")
	b.ReportMetric(own[len(own)/2], "events/s-owner")
}

// appendEvents appends n event lines from seq first on to a log.
func appendEvents(tb testing.TB, log string, first int64, n int) {
	fh, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	w := bufio.NewWriter(fh)
	pad := strings.Repeat("x", 130)
	for seq := first; seq < first+int64(n); seq++ {
		fmt.Fprintf(w, `{"seq":%d,"ts":"2026-01-01T00:00:00Z","type":"text","data":{"text":"%s"}}`+"\n", seq, pad)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}
