package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// BenchmarkCreateToFirstEvent measures, against the real supervisor and
// runner binaries on the unix socket, a session's creation over HTTP: from
// the request to the session's first event on disk (its ts: the runner
// stamps an event as it writes it) and to the answer. Each create follows
// the last after an untimed pause in which the supervisor's spare runner
// is replaced, as between sessions a host creates. Side by side, each
// round also times a GET /v1/health on the same socket: the floor of a
// request there.
func BenchmarkCreateToFirstEvent(b *testing.B) {
	sup := testsupervisor.Start(b, testsupervisor.Options{})
	ctx := context.Background()
	toEvent := make([]time.Duration, 0, b.N)
	toReply := make([]time.Duration, 0, b.N)
	health := make([]time.Duration, 0, b.N)
	for range b.N {
		time.Sleep(100 * time.Millisecond)
		t0 := time.Now()
		if _, err := sup.Client.Health(ctx); err != nil {
			b.Fatal(err)
		}
		health = append(health, time.Since(t0))
		t0 = time.Now()
		s, err := sup.Client.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: sup.Work})
		toReply = append(toReply, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		ev := firstEvent(b, filepath.Join(sup.State, "sessions", s.ID, "events.jsonl"))
		toEvent = append(toEvent, ev.TS.Sub(t0))
		if err := sup.Client.DeleteSession(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	quantiles(b, toEvent, "event")
	quantiles(b, toReply, "reply")
	quantiles(b, health, "health")
}

func firstEvent(b *testing.B, path string) event.Event {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil {
		b.Fatal(err)
	}
	var ev event.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		b.Fatal(err)
	}
	return ev
}

// quantiles reports the p50 and p99 of samples, in milliseconds.
func quantiles(b *testing.B, samples []time.Duration, name string) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	q := func(p float64) float64 {
		return float64(samples[int(p*float64(len(samples)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-"+name+"-ms")
	b.ReportMetric(q(0.99), "p99-"+name+"-ms")
}
