package runner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/corral-dev/corral/pkg/event"
)

func TestIDSourceSkipsPastResumedIDs(t *testing.T) {
	var ids idSource
	if id, n := ids.next("m"); id != "m1" || n != 1 {
		t.Fatalf("first id %s (%d)", id, n)
	}
	ids.skipTo(41)
	ids.skipTo(7) // never goes back
	if id, _ := ids.next("a"); id != "a42" {
		t.Fatalf("after skipTo(41): %s", id)
	}
}

// announced is what a queue's add announced.
type announced struct {
	id     string
	queued bool
}

func addAll(q *turnQueue, kinds ...string) []announced {
	var out []announced
	for _, k := range kinds {
		q.add(k, "text "+k, false, func(m event.Queued, queued bool) error {
			out = append(out, announced{m.ID, queued})
			return nil
		})
	}
	return out
}

func TestTurnQueueAddsInOrderWithKindPrefixes(t *testing.T) {
	var ids idSource
	q := newTurnQueue(&ids, func() bool { return false })
	got := addAll(q, kindSend, kindGoalCheck, kindLoop, kindInherit)
	want := []announced{{"m1", false}, {"g2", true}, {"l3", true}, {"i4", true}}
	if !slices.Equal(got, want) {
		t.Fatalf("announced %v, want %v", got, want)
	}
	for i, kind := range []string{kindSend, kindGoalCheck, kindLoop, kindInherit} {
		tn, _, closed := q.next()
		if closed || tn == nil || tn.kind != kind || tn.no != i+1 || tn.msg.ID != want[i].id {
			t.Fatalf("turn %d: %+v closed=%v", i+1, tn, closed)
		}
		q.end(tn, false)
		q.settle()
	}
	if tn, _, _ := q.next(); tn != nil {
		t.Fatalf("a turn from an empty queue: %+v", tn)
	}
}

func TestTurnQueueMarksMessagesQueuedBehindATurn(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(q *turnQueue)
		behindTurn bool
		queued     bool
	}{
		{"first in line", func(*turnQueue) {}, false, false},
		{"said to be behind a turn", func(*turnQueue) {}, true, true},
		{"behind a waiting message", func(q *turnQueue) { addAll(q, kindSend) }, false, true},
		{"while a turn runs", func(q *turnQueue) { addAll(q, kindSend); q.next() }, false, true},
		{"while a turn settles", func(q *turnQueue) {
			addAll(q, kindSend)
			tn, _, _ := q.next()
			q.end(tn, false)
		}, false, true},
		{"after a turn settled", func(q *turnQueue) {
			addAll(q, kindSend)
			tn, _, _ := q.next()
			q.end(tn, false)
			q.settle()
		}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := newTurnQueue(&idSource{}, func() bool { return false })
			c.setup(q)
			var queued bool
			q.add(kindSend, "x", c.behindTurn, func(_ event.Queued, qd bool) error { queued = qd; return nil })
			if queued != c.queued {
				t.Fatalf("queued = %v, want %v", queued, c.queued)
			}
		})
	}
}

func TestTurnQueueHeldStartsNothing(t *testing.T) {
	held := true
	q := newTurnQueue(&idSource{}, func() bool { return held })
	addAll(q, kindSend)
	if tn, _, _ := q.next(); tn != nil {
		t.Fatal("a held queue started a turn")
	}
	if !q.blocked() {
		t.Fatal("a held queue with a message is not blocked")
	}
	held = false
	q.notify()
	select {
	case <-q.wakeups():
	default:
		t.Fatal("notify did not wake the turn loop")
	}
	if tn, _, _ := q.next(); tn == nil {
		t.Fatal("a released queue started no turn")
	}
}

func TestTurnQueueSteersBelongToTheRunningTurn(t *testing.T) {
	q := newTurnQueue(&idSource{}, func() bool { return false })
	if q.steer("too early") {
		t.Fatal("a steer was taken with no turn running")
	}
	addAll(q, kindSend)
	tn, _, _ := q.next()
	for _, s := range []string{"a", "b", "c"} {
		if !q.steer(s) {
			t.Fatalf("steer %q refused during a turn", s)
		}
	}
	if got := q.takeSteers(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("took %q", got)
	}
	q.steer("left")
	stopped, leftover := q.end(tn, false)
	if stopped || !slices.Equal(leftover, []string{"left"}) {
		t.Fatalf("end: stopped %v, leftover %q", stopped, leftover)
	}
	if q.steer("after the end") {
		t.Fatal("a steer was taken by a turn that had ended")
	}
}

func TestTurnQueueClearStopsTheTurnAndEmptiesTheQueue(t *testing.T) {
	q := newTurnQueue(&idSource{}, func() bool { return false })
	addAll(q, kindSend, kindSend, kindSend)
	tn, _, _ := q.next()
	q.steer("never delivered")
	running, cleared := q.clear()
	if running != tn || cleared != 2 {
		t.Fatalf("clear: running %v, cleared %d", running, cleared)
	}
	if q.takeSteers() != nil {
		t.Fatal("clear left steers")
	}
	if stopped, _ := q.end(tn, false); !stopped {
		t.Fatal("a cleared turn did not end stopped")
	}
	if _, waiting := q.snapshot(); len(waiting) != 0 {
		t.Fatalf("waiting after clear: %v", waiting)
	}
}

func TestTurnQueueCancelTakesOneWaitingMessage(t *testing.T) {
	q := newTurnQueue(&idSource{}, func() bool { return false })
	addAll(q, kindSend, kindSend, kindSend)
	if m, ok := q.cancel("m2"); !ok || m.ID != "m2" {
		t.Fatalf("cancel m2: %+v %v", m, ok)
	}
	if _, ok := q.cancel("m2"); ok {
		t.Fatal("m2 cancelled twice")
	}
	if _, waiting := q.snapshot(); len(waiting) != 2 || waiting[0].ID != "m1" || waiting[1].ID != "m3" {
		t.Fatalf("waiting %v", waiting)
	}
}

func TestTurnQueueIdleAndQuiet(t *testing.T) {
	held := false
	q := newTurnQueue(&idSource{}, func() bool { return held })
	if q.idle() || !q.quiet() {
		t.Fatal("before any turn: idle or not quiet")
	}
	addAll(q, kindSend)
	tn, _, _ := q.next()
	if q.idle() || q.quiet() || !q.busy() || !q.inTurn() {
		t.Fatal("during a turn")
	}
	q.end(tn, false)
	if settled := q.settled(); settled == nil || q.idle() || q.quiet() {
		t.Fatal("while settling")
	}
	settled := q.settled()
	q.settle()
	<-settled
	if !q.idle() || !q.quiet() || q.busy() {
		t.Fatal("after the turn settled")
	}
	held = true
	addAll(q, kindSend)
	if !q.idle() || q.quiet() {
		t.Fatal("held with a message: want idle (nothing can run) and not quiet")
	}
}

func TestTurnQueueCloseEndsTheLoop(t *testing.T) {
	q := newTurnQueue(&idSource{}, func() bool { return false })
	addAll(q, kindSend)
	q.close()
	if tn, _, closed := q.next(); tn != nil || !closed {
		t.Fatalf("after close: turn %v, closed %v", tn, closed)
	}
}

func TestTurnQueueResumesTheTurnNumbers(t *testing.T) {
	q := newTurnQueue(&idSource{}, func() bool { return false })
	q.resumeAfter(7)
	addAll(q, kindSend)
	if tn, _, _ := q.next(); tn == nil || tn.no != 8 {
		t.Fatalf("the turn after resumeAfter(7): %+v", tn)
	}
}

// TestTurnQueueRecordsEveryChange: what becomes queueChanged events.
func TestTurnQueueRecordsEveryChange(t *testing.T) {
	q := newTurnQueue(&idSource{}, func() bool { return false })
	var got []string
	q.changed = func(d event.QueueChangedData) {
		var ids []string
		for _, m := range d.Queued {
			ids = append(ids, m.ID)
		}
		got = append(got, string(d.Change)+" "+d.MessageID+" "+fmt.Sprint(ids))
	}
	addAll(q, kindSend, kindSend, kindSend)
	tn, _, _ := q.next()
	q.cancel("m3")
	q.cancel("m9") // nothing to cancel: no record
	q.clear()
	q.clear() // already empty: no record
	want := []string{"added m1 [m1]", "added m2 [m1 m2]", "added m3 [m1 m2 m3]", "started m1 [m2 m3]", "cancelled m3 [m2]", "cleared  []"}
	if !slices.Equal(got, want) || tn == nil {
		t.Fatalf("records\n got %q\nwant %q", got, want)
	}
}
