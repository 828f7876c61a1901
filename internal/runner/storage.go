package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// storageProbeEvery is how often a storageFailed session checks on its own
// whether its storage takes writes again; a command checks at once.
const storageProbeEvery = 2 * time.Second

// storageGuard is the session's storageFailed state: set the moment the
// event log fails (a full disk, an I/O error), cleared once a probe finds
// the storage writable again and the failure event is in the log. While it
// is set no turn starts, every command but status is refused with
// storage_unavailable, and status reports storageFailed.
//
// The log's Failed callback may run on any goroutine, with a part's lock
// held (the turn queue's, recording a userMessage): it only sets the flag
// and hands the error to the runner's storage watcher, which does the rest
// with no lock held.
type storageGuard struct {
	down atomic.Bool
	// failures counts the failures so far, so that a command can tell its
	// own events may have been refused while it ran.
	failures atomic.Int64
	failed   chan *eventlog.StorageError // buffered: one waiting is enough

	mu   sync.Mutex // one recovery at a time; guards err
	err  *eventlog.StorageError
	stop context.CancelFunc
	done chan struct{}
}

func newStorageGuard() *storageGuard {
	return &storageGuard{failed: make(chan *eventlog.StorageError, 1)}
}

// fail is the event log's Failed callback.
func (g *storageGuard) fail(err *eventlog.StorageError) {
	g.failures.Add(1)
	g.down.Store(true)
	select {
	case g.failed <- err:
	default:
	}
}

// cause is the failure the session is stopped for, nil when it is not.
func (g *storageGuard) cause() *eventlog.StorageError {
	if !g.down.Load() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// refusal is the error a command gets while the storage is down.
func (g *storageGuard) refusal() error { return refusalFor(g.cause()) }

// refusalLocked is refusal with g.mu held.
func (g *storageGuard) refusalLocked() error { return refusalFor(g.err) }

func refusalFor(err *eventlog.StorageError) error {
	msg := "the session's event log cannot be written"
	if err != nil {
		msg = fmt.Sprintf("%s (%v)", msg, err.Err)
	}
	return wire.Errorf(wire.CodeStorageUnavailable,
		"%s: the session is storageFailed and takes no commands until its state folder has room again", msg)
}

// refuseForStorage is the refusal of a command while the storage is down.
// The state is reported first (presence.touch sends the report at once if
// it changed), so a shell that reads the refusal finds the session
// storageFailed at the supervisor, whichever goroutine saw the failure.
func (r *Runner) refuseForStorage() error {
	r.presence.touch()
	return r.storage.refusal()
}

// watchStorage starts the goroutine that acts on the log's failures: it
// ends the running turn and probes, now and then, for room. closeStorage
// stops it.
func (r *Runner) watchStorage() {
	ctx, cancel := context.WithCancel(context.Background())
	g := r.storage
	g.stop, g.done = cancel, make(chan struct{})
	go func() {
		defer close(g.done)
		var probe <-chan time.Time
		var ticker *time.Ticker
		defer func() {
			if ticker != nil {
				ticker.Stop()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-g.failed:
				r.storageFailed(ctx, err)
				if ticker == nil {
					ticker = time.NewTicker(storageProbeEvery)
					probe = ticker.C
				}
			case <-probe:
			}
			if g.down.Load() && r.recoverStorage() != nil {
				continue // still no room: probe again at the next tick
			}
			// Healthy (here or by a command's probe): no more ticks.
			if ticker != nil {
				ticker.Stop()
				ticker, probe = nil, nil
			}
		}
	}()
}

// closeStorage stops the storage watcher and waits for it.
func (r *Runner) closeStorage() {
	if r.storage.stop != nil {
		r.storage.stop()
		<-r.storage.done
	}
}

// storageFailed puts the session in its storageFailed state: the failure is
// logged at error level, the state reported, and the running turn ended
// (the engine interrupted, its asks denied and its hunks rejected, none of
// which the log can record: the failure event and the closing events follow
// once it can).
func (r *Runner) storageFailed(ctx context.Context, err *eventlog.StorageError) {
	r.storage.mu.Lock()
	r.storage.err = err
	r.storage.mu.Unlock()
	r.log.Error("event log storage failed: the session is storageFailed until its state folder has room",
		zap.String("session", r.Spec().ID), zap.String("path", err.Path), zap.String("op", err.Op),
		zap.Int64("lastSeq", err.LastSeq), zap.Error(err.Err))
	r.presence.touch()
	r.mu.Lock()
	t := r.turns.running
	eng := r.eng
	r.mu.Unlock()
	r.asks.denyAll("storageFailed")
	r.review.rejectAll("storageFailed")
	if eng != nil {
		r.interruptTurn(ctx, t, eng)
	}
	r.presence.touch()
}

// recoverStorage ends the storageFailed state when the storage takes writes
// again: the failure event goes into the log, then the terminal events of
// what the failure left open there (the interrupted turn, its asks and
// hunks), and the queue moves on. It returns the refusal while the storage
// is still down, and nil on a healthy session.
func (r *Runner) recoverStorage() error {
	g := r.storage
	if !g.down.Load() {
		return nil
	}
	// The watcher is ending the running turn: its end comes first, so
	// that the closing events written below find it open in the log.
	r.mu.Lock()
	t := r.turns.running
	r.mu.Unlock()
	if t != nil {
		select {
		case <-t.done:
		case <-time.After(stopWait):
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down.Load() {
		return nil
	}
	if r.turns.inTurn() {
		return g.refusalLocked()
	}
	if err := r.evlog().Probe(); err != nil {
		var serr *eventlog.StorageError
		if errors.As(err, &serr) {
			return refusalFor(serr)
		}
		return g.refusalLocked()
	}
	cause := "the event log could not be written"
	lastSeq := int64(0)
	if g.err != nil {
		cause = fmt.Sprintf("the event log could not be written after seq %d (%s: %v)", g.err.LastSeq, g.err.Op, g.err.Err)
		lastSeq = g.err.LastSeq
	}
	if err := r.store.record(event.Failure, event.FailureData{
		Code:    event.FailStorage,
		Message: cause + "; the running turn was ended and the session refused commands until its state folder had room again",
		Action:  "Nothing after seq " + fmt.Sprint(lastSeq) + " was acknowledged: send again what was refused.",
	}); err != nil {
		return g.refusalLocked()
	}
	left, err := scanLeftovers(r.store.eventsPath())
	if err != nil {
		r.log.Error("read the event log after a storage failure", zap.Error(err))
	} else if err := r.closeOpen(left); err != nil {
		return g.refusalLocked()
	}
	g.down.Store(false)
	g.err = nil
	r.mu.Lock()
	if r.turns.running == nil {
		r.state, r.activity = wire.StateIdle, ""
	}
	r.mu.Unlock()
	r.log.Info("event log storage writable again", zap.String("session", r.Spec().ID))
	r.turns.notify()
	r.presence.touch()
	return nil
}

// outcomeInterrupted is the outcome of a turn the log left open, closed
// by a later runner or after a storage failure.
const outcomeInterrupted = "interrupted"

// closeOpen records the terminal event of each ask, hunk and turn the log
// leaves open (by "expired", outcome "interrupted"), and returns the first
// failure to record one.
func (r *Runner) closeOpen(l leftovers) error {
	for _, id := range l.asks {
		if err := r.store.record(event.AskAnswered, event.AskAnsweredData{AskID: id, Decision: command.DecisionDeny, By: "expired"}); err != nil {
			return err
		}
	}
	for _, h := range l.hunks {
		if err := r.store.record(event.HunkDecided, event.HunkDecidedData{EditID: h.edit, HunkID: h.hunk, Decision: command.DecisionReject, By: "expired"}); err != nil {
			return err
		}
	}
	if l.openTurn > 0 {
		return r.store.record(event.TurnEnded, event.TurnEndedData{Turn: l.openTurn, Outcome: outcomeInterrupted})
	}
	return nil
}
