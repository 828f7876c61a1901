package sessions_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// parallel runs fn for 0..n-1 on workers goroutines, and fails the test
// with the first panic.
func parallel(t *testing.T, n, workers int, fn func(i int)) {
	t.Helper()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs <- fmt.Errorf("%v", r)
					for range next {
					}
				}
			}()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestThreeHundredSessionsOverThreeNodes(t *testing.T) {
	// Room for half the sessions live at once: the rest are stopped when
	// idle and start again, on their node, at their next use.
	f := startFleet(t, fleetOptions{nodes: 3, args: []string{"--max-live", "50"}})
	const n = 300
	ids := make([]string, n)
	start := time.Now()
	parallel(t, n, 6, func(i int) {
		s, err := f.c(i%3).CreateSession(ctxFor(t), wire.Spec{Engine: "script", Cwd: f.work, Scenario: f.scenario})
		if err != nil {
			panic(fmt.Sprintf("create %d through %s: %v", i, f.names[i%3], err))
		}
		ids[i] = s.ID
	})
	created := time.Since(start)
	start = time.Now()
	parallel(t, n, 6, func(i int) {
		lines := turnLines(f, ids[i], (i+1)%3, (i+2)%3)
		if len(lines) < 3 {
			panic(fmt.Sprintf("%s: %d events", ids[i], len(lines)))
		}
	})
	turns := time.Since(start)
	perNode := map[string]int{}
	for via := range 3 {
		list, err := f.c(via).Sessions(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]api.Session{}
		for _, s := range list {
			got[s.ID] = s
		}
		for _, id := range ids {
			s, ok := got[id]
			if !ok || s.Fleet == nil || s.Status == nil || s.Status.Turn != 1 {
				t.Fatalf("list through %s: %s is %+v (fleet %+v)", f.names[via], id, s, s.Fleet)
			}
			if via == 0 {
				perNode[s.Fleet.Node]++
			}
		}
	}
	t.Logf("created %d sessions in %v, one turn each through other nodes in %v; per node: %v", n, created.Round(time.Millisecond), turns.Round(time.Millisecond), perNode)
	for node, c := range perNode {
		if c < n/3-20 || c > n/3+20 {
			t.Fatalf("placement: %s has %d of %d sessions (%v)", node, c, n, perNode)
		}
	}
	f.checkNeverLiveTwice()
}

// turnLines is turn for a goroutine: it panics instead of failing.
func turnLines(f *testFleet, id string, via, reader int) (lines []string) {
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("%s: %v", id, r))
		}
	}()
	ctx := ctxFor(f.t)
	st, err := f.c(reader).Events(ctx, id, client.EventsOptions{From: 1, Follow: true})
	if err != nil {
		panic(fmt.Sprintf("events through %s: %v", f.names[reader], err))
	}
	defer st.Close()
	if _, err := f.c(via).Command(ctx, id, command.Send{Text: "hi"}); err != nil {
		panic(fmt.Sprintf("send through %s: %v", f.names[via], err))
	}
	for {
		line, err := st.Next()
		if err != nil {
			panic(fmt.Sprintf("events through %s: %v", f.names[reader], err))
		}
		lines = append(lines, string(line))
		if strings.Contains(string(line), `"type":"turnEnded"`) {
			return lines
		}
	}
}

func TestPlacementHonoursLabelsAndExplicitNodes(t *testing.T) {
	f := startFleet(t, fleetOptions{nodes: 3, nodeArgs: map[int][]string{
		0: {"--label", "gpu=1"},
		1: {"--label", "region=x", "--label", "gpu=0"},
	}})
	ctx := ctxFor(t)
	for _, tc := range []struct {
		labels map[string]string
		node   string
	}{
		{map[string]string{"gpu": "1"}, "node-0"},
		{map[string]string{"region": "x"}, "node-1"},
		{map[string]string{"region": "x", "gpu": "0"}, "node-1"},
	} {
		s, err := f.c(2).CreateSession(ctx, wire.Spec{Engine: "script", Cwd: f.work, Scenario: f.scenario, Placement: &wire.Placement{Labels: tc.labels}})
		if err != nil || s.Fleet.Node != tc.node || !strings.Contains(s.Fleet.Placement.Reason, "has ") {
			t.Fatalf("labels %v: %+v, %v; want %s", tc.labels, s, err, tc.node)
		}
	}
	_, err := f.c(2).CreateSession(ctx, wire.Spec{Engine: "script", Cwd: f.work, Placement: &wire.Placement{Labels: map[string]string{"gpu": "2"}}})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnavailable || !strings.Contains(we.Message, "lacks label gpu=2") {
		t.Fatalf("no node with gpu=2: %v", err)
	}
	_, err = f.c(0).CreateSession(ctx, wire.Spec{Engine: "script", Cwd: f.work, Placement: &wire.Placement{Node: "nowhere"}})
	if !errors.As(err, &we) || we.Code != wire.CodeUnavailable || !strings.Contains(we.Message, "not in the fleet") {
		t.Fatalf("a node not in the fleet: %v", err)
	}
}
