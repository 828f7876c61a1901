package fleet

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
	"github.com/nats-io/nats.go"
)

// A caller cannot tell a request lost on its way from a slow one: it sends
// it again under the same id, and the serving node runs it once and
// answers the copy. Here every answer comes after several copies were
// sent, as when the first request or its answer was lost.
func TestARequestSentAgainRunsOnceAndItsAnswerReachesTheCaller(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	hist, store := newHistory(), newStorage("shared")
	timing := testTiming()
	timing.Resend = 100 * time.Millisecond
	var runs atomic.Int64
	slow := func(ctx context.Context, req []byte) (any, error) {
		runs.Add(1)
		select {
		case <-time.After(5 * timing.Resend):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var n int
		if err := json.Unmarshal(req, &n); err != nil {
			return nil, err
		}
		return n + 1, nil
	}
	a := joinNodeWith(t, fleet, "a", store, hist, nil, nil, timing, c.Servers[0].URL())
	joinNodeWith(t, fleet, "b", store, hist, nil, map[string]Handler{"slow": slow}, timing, c.Servers[1].URL())
	eventually(t, 10*time.Second, "b in a's view", func() bool { return a.Alive("b") })
	// What went over the wire: every copy of every request, by its id.
	watcher := connect(t, c.Servers[2].URL())
	var mu sync.Mutex
	copies, ids := 0, map[string]bool{}
	_, err := watcher.Subscribe(names{fleet}.rpc("b", "slow"), func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		copies++
		ids[m.Header.Get(hdrRequestID)] = true
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var got int
		err := a.Call(ctx, "b", "slow", i, &got)
		cancel()
		if err != nil || got != i+1 {
			t.Fatalf("call %d: %d, %v", i, got, err)
		}
	}
	// Each answer took five Resends: each request went out again.
	eventually(t, 10*time.Second, "every request sent again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids) == 3 && copies >= 6
	})
	mu.Lock()
	defer mu.Unlock()
	if n := runs.Load(); n != 3 {
		t.Fatalf("3 requests, sent %d times in all, ran %d times", copies, n)
	}
}

func TestRecentCallsAnswerCopiesAndForgetWhenTheCallerHasGivenUp(t *testing.T) {
	var r recentCalls
	if fresh, _, _ := r.take("id1", "s", []byte("body"), "reply1", time.Minute); !fresh {
		t.Fatal("a new request is not fresh")
	}
	// A copy while it runs: its answer goes to the copy's reply subject.
	if fresh, answer, clash := r.take("id1", "s", []byte("body"), "reply2", time.Minute); fresh || answer != nil || clash {
		t.Fatalf("copy under way: fresh %v, answer %q, clash %v", fresh, answer, clash)
	}
	if to := r.done("id1", []byte("answer")); to != "reply2" {
		t.Fatalf("answer goes to %q, want the latest copy's reply2", to)
	}
	// A copy after the answer gets the answer back.
	if fresh, answer, _ := r.take("id1", "s", []byte("body"), "reply3", time.Minute); fresh || string(answer) != "answer" {
		t.Fatalf("copy after the answer: fresh %v, answer %q", fresh, answer)
	}
	// Another request under the same id is not answered with the first's.
	if _, answer, clash := r.take("id1", "s", []byte("other"), "reply4", time.Minute); !clash || answer != nil {
		t.Fatalf("another body under id1: answer %q, clash %v", answer, clash)
	}
	// Answered and past its caller's deadline: forgotten at the next sweep.
	r.take("id2", "s", nil, "r", -recentKeepExtra)
	r.done("id2", []byte("x"))
	r.nextSweep = time.Time{}
	if fresh, _, _ := r.take("id3", "s", nil, "r", time.Minute); !fresh {
		t.Fatal("id3 not fresh")
	}
	if r.size() != 2 {
		t.Fatalf("remembered %d, want id1 and id3 (id2 expired)", r.size())
	}
	// A request under way is never forgotten, whatever its deadline.
	r.take("id4", "s", nil, "r", -recentKeepExtra)
	r.nextSweep = time.Time{}
	r.take("id5", "s", nil, "r", time.Minute)
	if fresh, _, _ := r.take("id4", "s", nil, "r", time.Minute); fresh {
		t.Fatal("a request under way was forgotten")
	}
}
