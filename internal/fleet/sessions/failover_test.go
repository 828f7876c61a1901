package sessions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
)

// checkLog fails unless lines, a session's whole log, has seqs 1 to N
// each once (two runners on one folder would write a seq twice), and
// holds acked, the lines a client saw before, as they were.
func checkLog(t *testing.T, id string, lines []string, acked []string) {
	t.Helper()
	for i, line := range lines {
		var ev struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Seq != int64(i+1) {
			t.Fatalf("%s: line %d has seq %d (%v)", id, i+1, ev.Seq, err)
		}
	}
	if len(lines) < len(acked) {
		t.Fatalf("%s: %d events now, %d were acknowledged before", id, len(lines), len(acked))
	}
	for i, a := range acked {
		if lines[i] != a {
			t.Fatalf("%s: event %d changed:\n was %.120s\n now %.120s", id, i+1, a, lines[i])
		}
	}
}

// session reads session id through node i.
func (f *testFleet) session(i int, id string) *api.Session {
	f.t.Helper()
	s, err := f.c(i).Session(ctxFor(f.t), id)
	if err != nil {
		f.t.Fatalf("get %s through %s: %v", id, f.names[i], err)
	}
	return s
}

func TestKilledNodesSessionsResumeElsewhereWithNoAcknowledgedEventLost(t *testing.T) {
	f := startFleet(t, fleetOptions{nodes: 3})
	const n = 12
	var ids []string
	acked := map[string][]string{}
	for i := range n {
		s := f.create(i%3, 0)
		ids = append(ids, s.ID)
		// What a client saw through node 1: acknowledged events.
		acked[s.ID] = f.turn(s.ID, 2, 1, 1, fmt.Sprintf("before %d", i))
	}
	f.kill(0)
	killed := time.Now()

	for _, id := range ids {
		waitFor(t, 60*time.Second, "the session to move off the dead node", func() bool {
			s, err := f.c(1).Session(ctxFor(t), id)
			return err == nil && s.Fleet != nil && s.Fleet.Node != f.names[0] && s.Fleet.State == "" && s.Live
		})
	}
	t.Logf("every session live on another node %v after the kill", time.Since(killed).Round(time.Millisecond))
	moved := map[string]int{}
	for _, id := range ids {
		s := f.session(2, id)
		moved[s.Fleet.Node]++
		if s.Fleet.Moves != 1 || !strings.Contains(s.Fleet.Placement.Reason, "taken over from node node-0") {
			t.Fatalf("%s: %+v", id, s.Fleet)
		}
	}
	t.Logf("sessions taken over: %v", moved)
	for _, id := range ids {
		// Through either node, from the owner's file or the replica: every
		// event acknowledged before, unchanged, and the session goes on.
		lines := f.turn(id, 1, 2, 1, "after")
		checkLog(t, id, lines, acked[id])
		checkLog(t, id, f.readAll(1, id), lines)
	}
	f.checkNeverLiveTwice()
}

func TestKilledNATSServerLosesNothing(t *testing.T) {
	c := fleettest.StartCluster(t, 3)
	// Leases outlive the election of new leaders for what the dead server
	// led (4 to 9 s), as they do at the default TTL: no session moves.
	f := startFleet(t, fleetOptions{nodes: 3, cluster: c, args: []string{"--lease-ttl", "30s"}})
	var ids []string
	for i := range 6 {
		ids = append(ids, f.create(i%3, i%3).ID)
	}
	// Every session takes turns while a server dies: through another
	// node, its events read through a third. A send that fails, for any
	// reason, fails the test: the front sends a request lost with the
	// server again, and the owner runs it once.
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	var failed atomic.Bool
	stop := make(chan struct{})
	turns := make([]atomic.Int64, len(ids))
	slowest := make([]atomic.Int64, len(ids)) // the longest turn, in ms
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs <- fmt.Errorf("%s: %v", id, r)
					failed.Store(true)
				}
			}()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				began := time.Now()
				turnThrough(f, id, (i+1)%3, (i+2)%3, k)
				turns[i].Add(1)
				if d := time.Since(began).Milliseconds(); d > slowest[i].Load() {
					slowest[i].Store(d)
				}
			}
		}()
	}
	// waitTurns waits until every session has taken n more turns than in
	// since, or one of them failed.
	waitTurns := func(what string, since []int64, n int64) {
		t.Helper()
		waitFor(t, 3*time.Minute, what, func() bool {
			if failed.Load() {
				return true
			}
			for i := range turns {
				if turns[i].Load() < since[i]+n {
					return false
				}
			}
			return true
		})
	}
	snapshot := func() []int64 {
		out := make([]int64, len(turns))
		for i := range turns {
			out[i] = turns[i].Load()
		}
		return out
	}
	waitTurns("every session to take a turn", make([]int64, len(ids)), 1)
	// The server the event stream's leader is on, the hardest to lose.
	stream := f.fleet + "_events"
	leader := streamLeader(t, c.URLs(), stream)
	var victim *fleettest.Server
	for _, s := range c.Servers {
		if s.Name == leader {
			victim = s
		}
	}
	if victim == nil {
		t.Fatalf("the leader of %s is %q, not a server of the cluster", stream, leader)
	}
	t.Logf("killing %s, the leader of %s", victim.Name, stream)
	atKill := snapshot()
	victim.Kill()
	killed := time.Now()
	// Turns go on through the election, and once the cluster has
	// re-formed (every stream of the fleet led by a live server).
	var alive []string
	for _, s := range c.Servers {
		if s != victim {
			alive = append(alive, s.URL())
		}
	}
	for _, name := range []string{stream, "KV_" + f.fleet + "_leases", "KV_" + f.fleet + "_sessions", "KV_" + f.fleet + "_nodes"} {
		waitFor(t, 2*time.Minute, name+" to have a leader again", func() bool {
			l := streamLeader(t, alive, name)
			return l != "" && l != victim.Name
		})
	}
	t.Logf("the cluster re-formed %v after the kill", time.Since(killed).Round(time.Millisecond))
	reformed := snapshot()
	waitTurns("every session to take two turns after the kill", atKill, 2)
	waitTurns("every session to take a turn once the cluster re-formed", reformed, 1)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, id := range ids {
		owner := f.readAll(i%3, id)
		for via := range 3 {
			var got []string
			waitFor(t, time.Minute, "the replica to hold the log", func() bool {
				got = f.readAll(via, id)
				return len(got) == len(owner)
			})
			checkLog(t, id, got, owner)
		}
		if s := f.session((i+1)%3, id); s.Fleet.Node != f.names[i%3] || s.Fleet.Moves != 0 {
			t.Fatalf("%s moved while only a server died: %+v", id, s.Fleet)
		}
	}
	var slow []int64
	for i := range slowest {
		slow = append(slow, slowest[i].Load())
	}
	t.Logf("turns taken: %v, %v of them before the kill; the longest turn of each, in ms: %v", snapshot(), atKill, slow)
	f.checkNeverLiveTwice()
}

// turnThrough is turn for a goroutine: it panics instead of failing. It
// logs each step that took longer than a second.
func turnThrough(f *testFleet, id string, via, reader, k int) {
	ctx := ctxFor(f.t)
	step := time.Now()
	slow := func(what string) {
		if d := time.Since(step); d > time.Second {
			f.t.Logf("%s turn %d: %s took %v", id, k, what, d.Round(time.Millisecond))
		}
		step = time.Now()
	}
	st, err := f.c(reader).Events(ctx, id, client.EventsOptions{From: 1, Follow: true})
	if err != nil {
		panic(fmt.Sprintf("events through %s: %v", f.names[reader], err))
	}
	defer st.Close()
	slow("opening its events through " + f.names[reader])
	if _, err := f.c(via).Command(ctx, id, command.Send{Text: fmt.Sprintf("turn %d", k)}); err != nil {
		panic(fmt.Sprintf("send through %s: %v", f.names[via], err))
	}
	slow("the send through " + f.names[via])
	for {
		line, err := st.Next()
		if err != nil {
			panic(fmt.Sprintf("events through %s: %v", f.names[reader], err))
		}
		if strings.Contains(string(line), `"type":"turnEnded"`) && turnOf(line) >= k+1 {
			slow("reading to its end through " + f.names[reader])
			return
		}
	}
}

func TestPartitionedNodeGivesItsSessionsUpBeforeAnyoneTakesThem(t *testing.T) {
	f := startFleet(t, fleetOptions{nodes: 3, proxied: []int{0}})
	var ids []string
	acked := map[string][]string{}
	for i := range 9 {
		s := f.create(i%3, 0)
		ids = append(ids, s.ID)
		acked[s.ID] = f.turn(s.ID, 0, 1, 1, fmt.Sprintf("before %d", i))
	}
	cut := time.Now()
	for _, p := range f.proxies[0] {
		p.Cut()
	}
	for _, id := range ids {
		waitFor(t, 60*time.Second, "the session to move off the cut node", func() bool {
			s, err := f.c(1).Session(ctxFor(t), id)
			return err == nil && s.Fleet != nil && s.Fleet.Node != f.names[0] && s.Fleet.State == "" && s.Live
		})
	}
	t.Logf("every session live on another node %v after the cut", time.Since(cut).Round(time.Millisecond))
	// Node 0, cut off, gave them up on its own; the others took them only
	// after that (by the nodes' logs, on this machine's one clock).
	f.checkNeverLiveTwice()
	for _, p := range f.proxies[0] {
		p.Heal()
	}
	// Back in the fleet, node 0 serves them where they are now, and runs
	// none of them itself.
	for i, id := range ids {
		var lines []string
		waitFor(t, 30*time.Second, "node 0 to serve again", func() bool {
			_, err := f.c(0).Command(ctxFor(t), id, command.GetStatus{})
			return err == nil
		})
		lines = f.turn(id, 0, 2, 1, fmt.Sprintf("after %d", i))
		checkLog(t, id, lines, acked[id])
		if s := f.session(0, id); s.Fleet.Node == f.names[0] {
			t.Fatalf("%s is back on the node that was cut off: %+v", id, s.Fleet)
		}
	}
	f.checkNeverLiveTwice()
}

// turnOf reads the turn of a turnEnded event line.
func turnOf(line []byte) int {
	var ev struct {
		Data struct {
			Turn int `json:"turn"`
		} `json:"data"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return 0
	}
	return ev.Data.Turn
}
