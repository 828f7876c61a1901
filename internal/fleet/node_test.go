package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestNodesSeeEachOtherWithLabelsAndCapacity(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	hist := newHistory()
	store := newStorage("shared")
	a := joinNode(t, fleet, "a", store, hist, map[string]string{"gpu": "1"}, c.Servers[0].URL())
	b := joinNode(t, fleet, "b", store, hist, map[string]string{"region": "x"}, c.Servers[1].URL())
	eventually(t, 10*time.Second, "both nodes in both views", func() bool {
		return len(a.Nodes()) == 2 && len(b.Nodes()) == 2
	})
	for _, info := range b.Nodes() {
		if info.Name == "a" && (info.Labels["gpu"] != "1" || info.MaxLive != 64 || info.Storage != "shared") {
			t.Fatalf("b sees a as %+v", info)
		}
	}
	a.create(t, "s1")
	eventually(t, 10*time.Second, "a's live runner in b's view", func() bool {
		info, ok := b.reg.get("a")
		return ok && info.Live == 1
	})
	// The same name joins only when its earlier registration is gone: a
	// renews it meanwhile. (The fabric is opened first: on a loaded
	// machine that alone takes seconds.)
	f2 := openFabric(t, connect(t, c.Servers[2].URL()), fleet)
	r2 := newRegistry(f2, NodeInfo{Name: "a", Identity: "another", Storage: "shared"}, func() Capacity { return Capacity{} }, testLogger(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := r2.join(ctx)
	if !errors.Is(err, errNodeTaken) {
		t.Fatalf("second node a joined: %v", err)
	}
}

func TestPlacementByCapacityAndFit(t *testing.T) {
	nodes := []NodeInfo{
		{Name: "a", Labels: map[string]string{"gpu": "1"}, Engines: []string{"script", "claude"}, Live: 10, MaxLive: 64, MemAvailable: 8 << 30},
		{Name: "b", Labels: map[string]string{"region": "x"}, Engines: []string{"script"}, Live: 0, MaxLive: 64, MemAvailable: 8 << 30},
		{Name: "c", Engines: []string{"script", "claude"}, Live: 64, MaxLive: 64, MemAvailable: 8 << 30},
		{Name: "d", Engines: []string{"script", "claude"}, Live: 0, MaxLive: 64, MemAvailable: 100 << 20},
	}
	for _, tc := range []struct {
		name    string
		want    Want
		node    string // the one fitting node, when one
		errCode wire.Code
		reason  string
	}{
		{name: "a label only one node has", want: Want{Labels: map[string]string{"gpu": "1"}}, node: "a", reason: "has gpu=1"},
		{name: "an engine and memory only one open node has", want: Want{Engine: "claude"}, node: "a", reason: "d (100 MiB free"},
		{name: "an explicit node", want: Want{Node: "b"}, node: "b", reason: "asked for"},
		{name: "an explicit node that lacks a label", want: Want{Node: "b", Labels: map[string]string{"gpu": "1"}}, errCode: wire.CodeUnavailable, reason: "lacks label gpu=1"},
		{name: "a node not in the fleet", want: Want{Node: "z"}, errCode: wire.CodeUnavailable, reason: "not in the fleet"},
		{name: "no node with the label", want: Want{Labels: map[string]string{"gpu": "2"}}, errCode: wire.CodeUnavailable, reason: "no node fits"},
		{name: "a full node when it alone fits", want: Want{Node: "c"}, node: "c", reason: "every fitting node is full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlacer(func(n int) int { return 0 })
			got, err := p.place(tc.want, nodes, nil)
			if tc.errCode != "" {
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != tc.errCode || !strings.Contains(we.Message, tc.reason) {
					t.Fatalf("got %+v, %v; want a %s error saying %q", got, err, tc.errCode, tc.reason)
				}
				return
			}
			if err != nil || got.Node != tc.node || !strings.Contains(got.Reason, tc.reason) {
				t.Fatalf("got %+v, %v; want node %s for a reason saying %q", got, err, tc.node, tc.reason)
			}
		})
	}
}

func TestPlacementOfAFullFleetGoesToTheNodeHoldingFewerSessions(t *testing.T) {
	nodes := []NodeInfo{
		{Name: "a", Live: 50, MaxLive: 50, MemAvailable: 9 << 30},
		{Name: "b", Live: 50, MaxLive: 50, MemAvailable: 1 << 30},
	}
	draws := []int{0, 1}
	p := newPlacer(func(int) int { d := draws[0]; draws = append(draws[1:], d); return d })
	pl, err := p.place(Want{}, nodes, map[string]int{"a": 150, "b": 60})
	if err != nil || pl.Node != "b" || !strings.Contains(pl.Reason, "holding fewer sessions (60)") {
		t.Fatalf("got %+v, %v; want b, which holds fewer sessions", pl, err)
	}
}

func TestPlacementSpreadsABurstBetweenHeartbeats(t *testing.T) {
	nodes := []NodeInfo{
		{Name: "a", Live: 0, MaxLive: 200},
		{Name: "b", Live: 0, MaxLive: 200},
		{Name: "c", Live: 30, MaxLive: 200},
	}
	seed := uint64(1)
	p := newPlacer(func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int((seed >> 33) % uint64(n))
	})
	count := map[string]int{}
	for range 300 {
		pl, err := p.place(Want{}, nodes, nil) // every heartbeat is stale
		if err != nil {
			t.Fatal(err)
		}
		count[pl.Node]++
	}
	// With the 30 already live on c, a fair spread puts 110 on a and b
	// and 80 on c; the two-choice draw stays close to it.
	for node, want := range map[string]int{"a": 110, "b": 110, "c": 80} {
		if d := count[node] - want; d < -15 || d > 15 {
			t.Fatalf("placed %v; want about a=110 b=110 c=80", count)
		}
	}
}

func TestRequestsKeepTypedErrorsAcrossNodes(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	hist, store := newHistory(), newStorage("shared")
	type echo struct {
		Text string `json:"text"`
	}
	echoHandler := func(ctx context.Context, req []byte) (any, error) {
		var e echo
		if err := json.Unmarshal(req, &e); err != nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "echo: %v", err)
		}
		switch e.Text {
		case "missing":
			return nil, fmt.Errorf("looking it up: %w", wire.Errorf(wire.CodeNotFound, "session x not found"))
		case "deadline":
			d, ok := ctx.Deadline()
			if !ok || time.Until(d) > 3*time.Second {
				return nil, fmt.Errorf("no deadline from the caller (%v, %v)", d, ok)
			}
			return echo{"bounded"}, nil
		}
		return echo{strings.ToUpper(e.Text)}, nil
	}
	a := joinNode(t, fleet, "a", store, hist, nil, c.Servers[0].URL())
	b := joinNodeWith(t, fleet, "b", store, hist, nil, map[string]Handler{"echo": echoHandler}, testTiming(), c.Servers[2].URL())
	// Every node sees b only once it answers.
	eventually(t, 10*time.Second, "b in a's view", func() bool { return a.Alive("b") })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var got echo
	if err := a.Call(ctx, "b", "echo", echo{"hi"}, &got); err != nil || got.Text != "HI" {
		t.Fatalf("echo: %+v, %v", got, err)
	}
	if err := a.Call(ctx, "b", "echo", echo{"deadline"}, &got); err != nil || got.Text != "bounded" {
		t.Fatalf("deadline: %+v, %v", got, err)
	}
	err := a.Call(ctx, "b", "echo", echo{"missing"}, &got)
	if !errors.Is(err, wire.ErrNotFound) || err.Error() != "looking it up: session x not found" {
		t.Fatalf("missing: %v (%T), want not_found with its message", err, err)
	}
	if err := a.Call(ctx, "b", "nosuch", nil, nil); !errors.Is(err, wire.ErrBadRequest) {
		t.Fatalf("unknown op: %v", err)
	}
	if err := b.Call(ctx, "a", "echo", echo{"hi"}, nil); !errors.Is(err, wire.ErrBadRequest) {
		t.Fatalf("a node that does not serve echo: %v", err)
	}
	if err := b.Call(ctx, "z", "echo", echo{"hi"}, nil); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("a node not in the fleet: %v", err)
	}
}

func TestLeaseIsExclusiveRenewedAndReleased(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	hist, store := newHistory(), newStorage("shared")
	a := joinNode(t, fleet, "a", store, hist, nil, c.Servers[0].URL())
	b := joinNode(t, fleet, "b", store, hist, nil, c.Servers[1].URL())
	a.create(t, "s1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.leases.acquire(ctx, "s1"); !errors.Is(err, wire.ErrConflict) || !strings.Contains(err.Error(), "node a") {
		t.Fatalf("b took a's lease: %v", err)
	}
	// Renewals keep it well past its TTL.
	claim := a.local.live["s1"].claim
	deadline := claim.lease.Deadline()
	time.Sleep(testTiming().LeaseTTL + time.Second)
	select {
	case <-claim.Lost():
		t.Fatalf("a lost its lease: %v", claim.lease.Err())
	default:
	}
	if !claim.lease.Deadline().After(deadline) {
		t.Fatal("the lease's deadline did not move: no renewal")
	}
	// b may run it only once it belongs to b; released by a, b takes the
	// lease at once rather than after the TTL.
	if _, err := b.Hold(ctx, "s1"); !errors.Is(err, wire.ErrConflict) || !strings.Contains(err.Error(), "belongs to node a") {
		t.Fatalf("b held a's session: %v", err)
	}
	a.local.stop("s1")
	eventually(t, 5*time.Second, "the lease released", func() bool {
		v, _, err := b.leases.current(ctx, "s1")
		return err == nil && v == nil
	})
	l, err := b.leases.acquire(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence() <= claim.Fence() {
		t.Fatalf("fence %d after %d", l.Fence(), claim.Fence())
	}
	l.Release(ctx)
	hist.check(t)
}
