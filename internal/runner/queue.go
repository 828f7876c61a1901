package runner

import (
	"context"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/event"
)

// The kinds of queued message (userMessage's kind). A message's id begins
// with its kind's letter: m, g, l, i.
const (
	kindSend      = "send"      // a person's message (or a steer that found no tool boundary)
	kindGoalCheck = "goalCheck" // the goal check's list of unmet clauses
	kindLoop      = "loop"      // a timed loop's prompt
	kindInherit   = "inherit"   // the handoff from a parent session
)

func idPrefix(kind string) string {
	switch kind {
	case kindGoalCheck:
		return "g"
	case kindLoop:
		return "l"
	case kindInherit:
		return "i"
	default:
		return "m"
	}
}

// turnQueue holds the messages waiting for a turn, the turn in progress
// and the steers waiting for its next tool boundary, numbers the turns,
// and says when the next turn may start: a message waits, the runner is
// not closing, and the queue is not held (held reports the spend cap).
// It runs nothing itself: the runner's turn loop takes each turn (next),
// ends it (end) and, once the turn-end policies are done, settles it.
type turnQueue struct {
	ids  *idSource
	held func() bool // called with mu held; it must not call back
	wake chan struct{}
	// changed records every change of the waiting messages (the
	// queueChanged event), called with mu held so that the records come
	// in the order of the changes; nil records nothing.
	changed func(event.QueueChangedData)

	mu      sync.Mutex
	waiting []queuedMessage
	running *turn
	// settling is open from a turn's end until its turn-end policies
	// are done, so nothing mistakes that gap for idleness.
	settling chan struct{}
	steers   []string
	turnNo   int
	closed   bool
}

type queuedMessage struct {
	event.Queued
	kind string
}

// turn is the turn in progress.
type turn struct {
	no     int
	msg    event.Queued
	kind   string
	cancel context.CancelFunc
	// done is closed once turnEnded is in the log.
	done  chan struct{}
	start time.Time
	// stopped is set by a stop (turnQueue.clear); guarded by turnQueue.mu.
	stopped bool
}

func newTurnQueue(ids *idSource, held func() bool) *turnQueue {
	return &turnQueue{ids: ids, held: held, wake: make(chan struct{}, 1)}
}

// add queues a message of kind and returns it. announce runs before the
// turn loop can see the message, and in queue order, so what it records
// (the userMessage event) comes before the message's turn and in the
// order the messages run; queued is false when the message is first in
// line with no turn running or ending (or behindTurn says otherwise). A
// message whose announcement fails (its event is not in the log) is not
// queued, and add returns announce's error; its id is not used again.
func (q *turnQueue) add(kind, text string, behindTurn bool, announce func(m event.Queued, queued bool) error) (event.Queued, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	id, _ := q.ids.next(idPrefix(kind))
	m := event.Queued{ID: id, Text: text}
	if err := announce(m, behindTurn || q.running != nil || q.settling != nil || len(q.waiting) > 0); err != nil {
		return event.Queued{}, err
	}
	q.waiting = append(q.waiting, queuedMessage{m, kind})
	q.changedLocked(event.QueueAdded, m.ID)
	q.notifyLocked()
	return m, nil
}

// changedLocked records a change of the waiting messages; q.mu is held.
func (q *turnQueue) changedLocked(change event.QueueChange, id string) {
	if q.changed == nil {
		return
	}
	waiting := make([]event.Queued, len(q.waiting))
	for i, m := range q.waiting {
		waiting[i] = m.Queued
	}
	q.changed(event.QueueChangedData{Change: change, MessageID: id, Queued: waiting})
}

// wakeups delivers a value whenever the next turn may have become
// possible; the turn loop waits on it when next finds nothing to run.
func (q *turnQueue) wakeups() <-chan struct{} { return q.wake }

// notify wakes the turn loop (after the spend cap is raised, say).
func (q *turnQueue) notify() {
	q.mu.Lock()
	q.notifyLocked()
	q.mu.Unlock()
}

func (q *turnQueue) notifyLocked() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next starts the next turn if one may start, with its context, which a
// stop's cancel ends; closed reports that the runner is closing and no
// turn will start again.
func (q *turnQueue) next() (t *turn, ctx context.Context, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, nil, true
	}
	if len(q.waiting) == 0 || q.held() {
		return nil, nil, false
	}
	m := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.changedLocked(event.QueueStarted, m.ID)
	q.turnNo++
	ctx, cancel := context.WithCancel(context.Background())
	t = &turn{no: q.turnNo, msg: m.Queued, kind: m.kind, cancel: cancel, done: make(chan struct{}), start: time.Now()}
	q.running = t
	return t, ctx, false
}

// close stops turns from starting and wakes the turn loop to see it.
func (q *turnQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.notifyLocked()
	q.mu.Unlock()
}

// end marks the running turn t over and the queue settling, and hands back
// the steers that found no tool boundary. From here a steer finds no turn.
// stopped is true when a stop or the engine stopped the turn.
func (q *turnQueue) end(t *turn, stoppedByEngine bool) (stopped bool, leftover []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	leftover, q.steers = q.steers, nil
	if q.running == t {
		q.running = nil
	}
	q.settling = make(chan struct{})
	return t.stopped || stoppedByEngine, leftover
}

// settle ends the settling that end began.
func (q *turnQueue) settle() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.settling != nil {
		close(q.settling)
		q.settling = nil
	}
}

// settled returns a channel closed once the ended turn has settled, or nil
// when no turn is settling.
func (q *turnQueue) settled() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.settling == nil {
		return nil
	}
	return q.settling
}

// steer keeps text for the running turn's next tool boundary and reports
// whether a turn was running to take it.
func (q *turnQueue) steer(text string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running == nil {
		return false
	}
	q.steers = append(q.steers, text)
	return true
}

// takeSteers hands over the steers waiting for a tool boundary.
func (q *turnQueue) takeSteers() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.steers
	q.steers = nil
	return s
}

// cancel takes the waiting message id out of the queue.
func (q *turnQueue) cancel(id string) (event.Queued, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, m := range q.waiting {
		if m.ID == id {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			q.changedLocked(event.QueueCancelled, id)
			return m.Queued, true
		}
	}
	return event.Queued{}, false
}

// clear empties the queue and the steers for a stop, and marks the running
// turn (returned, nil if none) stopped. cleared counts the messages taken
// out of the queue.
func (q *turnQueue) clear() (running *turn, cleared int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cleared = len(q.waiting)
	q.waiting, q.steers = nil, nil
	if cleared > 0 {
		q.changedLocked(event.QueueCleared, "")
	}
	if q.running != nil {
		q.running.stopped = true
	}
	return q.running, cleared
}

// inTurn reports whether a turn is running.
func (q *turnQueue) inTurn() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running != nil
}

// busy reports whether a turn is running or a message waits.
func (q *turnQueue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running != nil || len(q.waiting) > 0
}

// quiet reports whether no turn is running or settling and no message
// waits.
func (q *turnQueue) quiet() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running == nil && q.settling == nil && len(q.waiting) == 0
}

// blocked reports whether a message waiting now would not run next: one
// waits already, or the queue is held.
func (q *turnQueue) blocked() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting) > 0 || q.held()
}

// idle reports whether, after at least one turn, no turn runs or settles
// and nothing in the queue can run.
func (q *turnQueue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running == nil && q.settling == nil && (len(q.waiting) == 0 || q.held()) && q.turnNo > 0
}

// snapshot returns the number of the last turn and the waiting messages.
func (q *turnQueue) snapshot() (turnNo int, waiting []event.Queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	waiting = make([]event.Queued, len(q.waiting))
	for i, m := range q.waiting {
		waiting[i] = m.Queued
	}
	return q.turnNo, waiting
}

// resumeAfter numbers the next turn after turnNo, the last one a
// previous runner started.
func (q *turnQueue) resumeAfter(turnNo int) {
	q.mu.Lock()
	q.turnNo = turnNo
	q.mu.Unlock()
}
