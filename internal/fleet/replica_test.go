package fleet

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go/jetstream"
)

// checkEvents compares events read from the replica with the log's lines
// from seq from on.
func checkEvents(t *testing.T, got []Event, want [][]byte, from int64) {
	t.Helper()
	if len(got) != len(want)-int(from-1) {
		t.Fatalf("read %d events from seq %d, the log has %d from there", len(got), from, len(want)-int(from-1))
	}
	for i, ev := range got {
		seq := from + int64(i)
		if ev.Seq != seq || !bytes.Equal(ev.Line, want[seq-1]) || string(ev.Type) != "text" {
			t.Fatalf("event %d: got seq %d type %q line %.60q, want seq %d line %.60q", i, ev.Seq, ev.Type, ev.Line, seq, want[seq-1])
		}
	}
}

func TestReplicaHoldsTheLogAndAnyNodeReadsItFromAnySeq(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	owner := openFabric(t, connect(t, c.Servers[0].URL()), fleet)
	front := openFabric(t, connect(t, c.Servers[2].URL()), fleet)
	log := newMemLog()
	log.add("s1", 6000, 120)
	// A line longer than a message, in the middle of a bucket.
	log.addLine("s1", eventLine(6001, 1500<<10))
	log.add("s1", 9000, 300)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := newPublisher(owner, "s1", 7, log, testLogger(t))
	if err := p.run(ctx, false); err != nil {
		t.Fatal(err)
	}
	want := log.all("s1")
	for _, from := range []int64{1, 2, 4095, 4096, 4097, 6000, 6001, 6002, 8192, 9000} {
		s, err := front.Replay(ctx, "s1", from, false)
		if err != nil {
			t.Fatalf("from %d: %v", from, err)
		}
		checkEvents(t, readAll(t, s), want, from)
		s.Close()
	}
	// Past the end, and a session with nothing replicated, end at once.
	for _, c := range []struct {
		session string
		from    int64
	}{{"s1", 9001}, {"s2", 1}} {
		s, err := front.Replay(ctx, c.session, c.from, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, s); len(got) != 0 {
			t.Fatalf("%s from %d: read %d events, want none", c.session, c.from, len(got))
		}
		s.Close()
	}
}

func TestReplicaFollowerSeesNewEventsFromAnotherNode(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	owner := openFabric(t, connect(t, c.Servers[0].URL()), fleet)
	front := openFabric(t, connect(t, c.Servers[1].URL()), fleet)
	log := newMemLog()
	log.add("s1", 10, 80)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The follower opens before anything is replicated: it must miss
	// nothing published after.
	s, err := front.Replay(ctx, "s1", 5, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- newPublisher(owner, "s1", 1, log, testLogger(t)).run(pctx, true) }()
	for seq := int64(5); seq <= 3000; seq++ {
		if seq == 11 {
			log.add("s1", 3000, 80)
		}
		ev, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("at seq %d: %v", seq, err)
		}
		if ev.Seq != seq {
			t.Fatalf("got seq %d, want %d", ev.Seq, seq)
		}
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("publisher ended with %v", err)
	}
}

// replicaMessages returns the first and last seq of every message the
// replica holds for session, in stream order.
func replicaMessages(t *testing.T, f *Fabric, session string) [][2]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out [][2]int64
	seq := uint64(1)
	for {
		m, err := f.events.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(f.names.sessionEvents(session)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		first, last, _, _, err := replicaHeaders(m.Header)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]int64{first, last})
		seq = m.Sequence + 1
	}
}

// checkGapless fails unless the messages hold seqs 1 to last, each once,
// in order.
func checkGapless(t *testing.T, msgs [][2]int64, last int64) {
	t.Helper()
	next := int64(1)
	for _, m := range msgs {
		if m[0] != next {
			t.Fatalf("replica messages %v: one starts at %d, want %d", msgs, m[0], next)
		}
		next = m[1] + 1
	}
	if next != last+1 {
		t.Fatalf("replica ends at seq %d, want %d", next-1, last)
	}
}

func TestReplicaTakeoverCopiesWhatTheOldOwnerNeverPublishedAndFencesIt(t *testing.T) {
	c := fleettest.Shared(t)
	fleet := newFleetName()
	a := openFabric(t, connect(t, c.Servers[0].URL()), fleet)
	b := openFabric(t, connect(t, c.Servers[1].URL()), fleet)
	log := newMemLog() // the session's folder on storage both nodes reach
	log.add("s1", 100, 60)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	old := newPublisher(a, "s1", 1, log, testLogger(t))
	if err := old.run(ctx, false); err != nil {
		t.Fatal(err)
	}
	// The old owner's runner wrote 50 more events before the node was cut
	// off; none reached the replica.
	log.add("s1", 150, 60)
	// The new owner takes over: it copies from where the replica ends.
	if err := newPublisher(b, "s1", 2, log, testLogger(t)).run(ctx, false); err != nil {
		t.Fatal(err)
	}
	log.add("s1", 160, 60)
	if err := newPublisher(b, "s1", 2, log, testLogger(t)).run(ctx, false); err != nil {
		t.Fatal(err)
	}
	// The old owner comes back with a stale idea of the replica's end: its
	// append is refused, and after reading the end again it has nothing to
	// add.
	err := old.publish(ctx, 101, 101, 0, 0, append(eventLine(101, 60), '\n'))
	if !errors.Is(err, errResync) {
		t.Fatalf("stale owner's publish: %v, want a refusal", err)
	}
	if err := old.run(ctx, false); err != nil {
		t.Fatal(err)
	}
	checkGapless(t, replicaMessages(t, b, "s1"), 160)
	s, err := a.Replay(ctx, "s1", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkEvents(t, readAll(t, s), log.all("s1"), 1)
}

// goneLog is the event log of a node whose sessions are all gone; it
// counts the streams asked of it.
type goneLog struct{ opened atomic.Int64 }

func (l *goneLog) Events(_ context.Context, session string, _ int64, _ bool) (EventStream, error) {
	l.opened.Add(1)
	return nil, wire.Errorf(wire.CodeNotFound, "session %s not found", session)
}

// A claim's last copy of a deleted session ends at once: waiting on a log
// that is gone held the session's lease for the whole stop time. A live
// copy waits, since its session may not be made yet.
func TestReplicaPublisherOfAGoneSession(t *testing.T) {
	c := fleettest.Shared(t)
	owner := openFabric(t, connect(t, c.Servers[0].URL()), newFleetName())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gone := &goneLog{}
	if err := newPublisher(owner, "s1", 1, gone, testLogger(t)).run(ctx, false); err != nil || gone.opened.Load() != 1 {
		t.Fatalf("the last copy of a gone session: %v after %d tries, want nil after one", err, gone.opened.Load())
	}
	gone = &goneLog{}
	lctx, lcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- newPublisher(owner, "s1", 1, gone, testLogger(t)).run(lctx, true) }()
	eventually(t, time.Minute, "the live copy tries again", func() bool { return gone.opened.Load() >= 2 })
	lcancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a live copy ended with %v, want it waiting until cancelled", err)
	}
}
