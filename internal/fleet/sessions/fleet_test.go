package sessions_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// readAll reads a session's events through node i, from seq 1 to the end.
func (f *testFleet) readAll(i int, id string) []string {
	f.t.Helper()
	st, err := f.c(i).Events(ctxFor(f.t), id, client.EventsOptions{From: 1})
	if err != nil {
		f.t.Fatalf("events of %s through %s: %v", id, f.names[i], err)
	}
	defer st.Close()
	var out []string
	for {
		line, err := st.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			f.t.Fatalf("events of %s through %s: %v", id, f.names[i], err)
		}
		out = append(out, string(line))
	}
}

func TestEveryCommandAndStreamWorksThroughEveryNode(t *testing.T) {
	f := startFleet(t, fleetOptions{nodes: 3})
	ctx := ctxFor(t)
	// One session on each node, each used through every node.
	var ids []string
	for on := range 3 {
		s := f.create((on+1)%3, on)
		if s.Fleet.Node != f.names[on] || !s.Fleet.Placement.Requested {
			t.Fatalf("session asked for %s: %+v", f.names[on], s.Fleet)
		}
		ids = append(ids, s.ID)
	}
	for _, id := range ids {
		for via := range 3 {
			f.turn(id, via, (via+1)%3, 1, fmt.Sprintf("hello from %d", via))
		}
		// The log reads the same through every node, the owner's file
		// or the replica, once the replica has caught up.
		for i := 1; i < 3; i++ {
			var want, got []string
			waitFor(t, 10*time.Second, "the replica to hold the log", func() bool {
				want, got = f.readAll(0, id), f.readAll(i, id)
				return strings.Join(got, "\n") == strings.Join(want, "\n")
			})
			if len(want) < 3*4 {
				t.Fatalf("%s's log has %d events after 3 turns", id, len(want))
			}
		}
		for via := range 3 {
			// The session's status takes in a turn's end as the event
			// reaches its supervisor, which may be after a reader saw it.
			var s *api.Session
			var err error
			waitFor(t, 10*time.Second, "the status to reach turn 3", func() bool {
				s, err = f.c(via).Session(ctx, id)
				return err != nil || s.Status == nil || s.Status.Turn >= 3
			})
			if err != nil || !s.Live || s.Status == nil || s.Status.Turn != 3 || s.Fleet == nil {
				t.Fatalf("get %s through %s: %+v (status %+v), %v", id, f.names[via], s, s.Status, err)
			}
			reply, err := f.c(via).Command(ctx, id, command.GetStatus{})
			if err != nil || !reply.OK {
				t.Fatalf("status of %s through %s: %+v, %v", id, f.names[via], reply, err)
			}
			w, err := f.c(via).Wait(ctx, id, client.WaitOptions{For: api.WaitIdle})
			if err != nil || !w.Met {
				t.Fatalf("wait for %s through %s: %+v, %v", id, f.names[via], w, err)
			}
			// A refusal keeps its code through any node.
			reply, err = f.c(via).Command(ctx, id, command.Answer{AskID: "a999", Decision: command.DecisionAllow})
			var we *wire.Error
			if err == nil && reply != nil && !reply.OK {
				err = reply.Error
			}
			if !errors.As(err, &we) || we.Code != wire.CodeNotFound {
				t.Fatalf("answering no ask through %s: %+v, %v", f.names[via], reply, err)
			}
		}
	}
	for via := range 3 {
		list, err := f.c(via).Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, s := range list {
			seen[s.ID] = true
		}
		for _, id := range ids {
			if !seen[id] {
				t.Fatalf("list through %s lacks %s", f.names[via], id)
			}
		}
	}
	// An unknown session is not_found through every node.
	for via := range 3 {
		if _, err := f.c(via).Session(ctx, "0123456789ab"); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("unknown session through %s: %v", f.names[via], err)
		}
	}
	// A terminal of node 0's session, attached through node 2: output,
	// input, a resize and the program's exit all cross the bridge.
	term, err := f.c(2).AttachTerminal(ctx, ids[0], client.TermOptions{TermID: "t1", Command: []string{"sh", "-c",
		"echo bridged-$((6*7)); read x; echo got-$x; read y; echo size-$(stty size); exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	var out bytes.Buffer
	var exit *client.TermExit
	readUntil := func(want string) {
		t.Helper()
		for !strings.Contains(out.String(), want) {
			ev, err := term.Next(ctx)
			if err != nil {
				t.Fatalf("terminal: %v (so far %q)", err, out.String())
			}
			out.Write(ev.Output)
			if ev.Exit != nil {
				exit = ev.Exit
				return
			}
		}
	}
	readUntil("bridged-42")
	if err := term.Input(ctx, []byte("yes\n")); err != nil {
		t.Fatal(err)
	}
	readUntil("got-yes")
	// The resize and the input travel in order on one subject, so the
	// program reads its new size after the line.
	if err := term.Resize(ctx, 101, 33); err != nil {
		t.Fatal(err)
	}
	if err := term.Input(ctx, []byte("\n")); err != nil {
		t.Fatal(err)
	}
	readUntil("size-33 101")
	readUntil("\x00never printed")
	if exit == nil || exit.Code != 3 {
		t.Fatalf("the program's exit through the bridge: %+v (output %q)", exit, out.String())
	}
	// Deleting through another node removes it everywhere.
	if err := f.c(1).DeleteSession(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	for via := range 3 {
		waitFor(t, 10*time.Second, "the deletion everywhere", func() bool {
			_, err := f.c(via).Session(ctx, ids[2])
			return errors.Is(err, wire.ErrNotFound)
		})
	}
	f.checkNeverLiveTwice()
}

func TestTheMultiplexedStreamCoversTheFleet(t *testing.T) {
	f := startFleet(t, fleetOptions{nodes: 3})
	ctx := ctxFor(t)
	feed, err := f.c(0).Feed(ctx, client.FeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	var ids []string
	for on := range 3 {
		s := f.create(on, on)
		ids = append(ids, s.ID)
		f.turn(s.ID, on, on, 1, "hi")
	}
	// Node 0's stream carries every node's sessions: their events and
	// their lifecycle changes.
	ended, live := map[string]bool{}, map[string]bool{}
	var cursor string
	for len(ended) < 3 || len(live) < 3 {
		it, err := feed.Next()
		if err != nil {
			t.Fatal(err)
		}
		if it.Lifecycle != nil && it.Lifecycle.Type == api.LifeLive {
			live[it.Session] = true
		}
		if it.Event != nil && strings.Contains(string(it.Event), `"type":"turnEnded"`) {
			ended[it.Session] = true
			if it.Session == ids[1] {
				cursor = it.Cursor
			}
		}
	}
	// A cursor from node 0 resumes on node 2, right after its item.
	resumed, err := f.c(2).Feed(ctx, client.FeedOptions{Cursor: cursor})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	f.turn(ids[1], 1, 1, 1, "again")
	for {
		it, err := resumed.Next()
		if err != nil {
			t.Fatal(err)
		}
		if it.Stream != nil {
			t.Fatalf("resumed with a mark: %+v", it.Stream)
		}
		if it.Session == ids[1] && it.Event != nil {
			if strings.Contains(string(it.Event), `"type":"turnEnded"`) {
				break
			}
		}
	}
}
