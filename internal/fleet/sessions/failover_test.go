package sessions_test

import (
	"encoding/json"
	"errors"
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
	"github.com/corral-dev/corral/pkg/wire"
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
	lostInFlight.Store(0)
	c := fleettest.StartCluster(t, 3)
	// Leases outlive the election of new leaders for what the dead server
	// led (4 to 9 s), as they do at the default TTL: no session moves.
	f := startFleet(t, fleetOptions{nodes: 3, cluster: c, args: []string{"--lease-ttl", "30s"}})
	var ids []string
	for i := range 6 {
		ids = append(ids, f.create(i%3, i%3).ID)
	}
	// Every session takes turns while a server dies: through another
	// node, its events read through a third.
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	stop := make(chan struct{})
	turns := make([]int, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs <- fmt.Errorf("%s: %v", id, r)
				}
			}()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				turnThrough(f, id, (i+1)%3, (i+2)%3, k)
				turns[i]++
			}
		}()
	}
	time.Sleep(2 * time.Second)
	// The server the event stream's leader is on, the hardest to lose.
	victim := c.Servers[0]
	t.Logf("killing %s", victim.Name)
	victim.Kill()
	time.Sleep(8 * time.Second)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, id := range ids {
		if turns[i] < 2 {
			t.Fatalf("%s took %d turns", id, turns[i])
		}
		owner := f.readAll(i%3, id)
		for via := range 3 {
			var got []string
			waitFor(t, 20*time.Second, "the replica to hold the log", func() bool {
				got = f.readAll(via, id)
				return len(got) == len(owner)
			})
			checkLog(t, id, got, owner)
		}
		if s := f.session((i+1)%3, id); s.Fleet.Node != f.names[i%3] || s.Fleet.Moves != 0 {
			t.Fatalf("%s moved while only a server died: %+v", id, s.Fleet)
		}
	}
	t.Logf("turns taken: %v; requests lost in flight with the server: %d", turns, lostInFlight.Load())
	f.checkNeverLiveTwice()
}

// lostInFlight counts the requests TestKilledNATSServerLosesNothing lost
// with the server it killed.
var lostInFlight atomic.Int64

// turnThrough is turn for a goroutine: it panics instead of failing.
func turnThrough(f *testFleet, id string, via, reader, k int) {
	ctx := ctxFor(f.t)
	st, err := f.c(reader).Events(ctx, id, client.EventsOptions{From: 1, Follow: true})
	if err != nil {
		panic(fmt.Sprintf("events through %s: %v", f.names[reader], err))
	}
	defer st.Close()
	for {
		_, err := f.c(via).Command(ctx, id, command.Send{Text: fmt.Sprintf("turn %d", k)})
		if err == nil {
			break
		}
		// A request on its way through the server that dies is lost with
		// it: the front answers timeout, and the command may or may not
		// have run. Nothing acknowledged is lost; the client sends again
		// (a second turn, if the first ran, is read past below).
		if !errors.Is(err, wire.ErrTimeout) || lostInFlight.Add(1) > int64(len(f.names)) {
			panic(fmt.Sprintf("send through %s: %v", f.names[via], err))
		}
		f.t.Logf("send through %s lost in flight: %v", f.names[via], err)
	}
	for {
		line, err := st.Next()
		if err != nil {
			panic(fmt.Sprintf("events through %s: %v", f.names[reader], err))
		}
		if strings.Contains(string(line), `"type":"turnEnded"`) && turnOf(line) >= k+1 {
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
