package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// WaitOptions say what Wait waits for.
type WaitOptions struct {
	For api.WaitFor
	// After, when set, makes a turnEnd wait for the first turnEnded past
	// this seq, whatever the session is doing now.
	After *int64
}

// Wait returns when session id's turn ends, it needs a person, or it is
// idle (api.WaitFor), with the events that decided it. It never starts a
// runner. When ctx ends first (its deadline: the caller's timeout) the reply
// has Met false.
func (m *Manager) Wait(ctx context.Context, id string, opts WaitOptions) (api.WaitReply, error) {
	if !slices.Contains(api.WaitFors(), opts.For) {
		return api.WaitReply{}, wire.Errorf(wire.CodeBadRequest, "for=%q: want turnEnd, human or idle", opts.For)
	}
	// The feed reads the log from the seq after the one the status
	// saw, so nothing that happens in between is missed.
	s, err := m.Get(ctx, id)
	if err != nil {
		return api.WaitReply{}, err
	}
	// A session whose log takes no events meets no wait until it does.
	if s.Live && s.Status != nil && s.Status.State == wire.StateStorageFailed {
		return api.WaitReply{}, storageUnavailable(id)
	}
	w := &waiter{m: m, id: id, For: opts.For, live: s.Live, st: s.Status,
		goal: s.Spec.Goal != nil && !s.Spec.Goal.Done, capReached: s.Status != nil && s.Status.Held}
	from := w.lastSeq() + 1
	if opts.After != nil {
		from = *opts.After + 1
	} else if met := w.metNow(); met {
		return w.reply(ctx, true)
	}
	f, err := m.Feed(ctx, FeedOptions{Sessions: []string{id}, FromStart: true, FromSeq: from})
	if err != nil {
		return api.WaitReply{}, err
	}
	defer f.Close()
	// Deleted before the feed began: its sessionDeleted is not in it.
	if _, err := os.Stat(filepath.Join(m.dir(id), metaFile)); err != nil {
		return api.WaitReply{}, notFound(id)
	}
	// Failed before the feed began: its sessionStorageFailed is not in it.
	if m.storageFailed(id) {
		return api.WaitReply{}, storageUnavailable(id)
	}
	for {
		ev, err := f.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return w.reply(context.WithoutCancel(ctx), false)
			}
			return api.WaitReply{}, err
		}
		met, err := w.take(ctx, ev)
		if err != nil {
			return api.WaitReply{}, err
		}
		if met {
			return w.reply(ctx, true)
		}
	}
}

// waiter tracks one wait.
type waiter struct {
	m      *Manager
	id     string
	For    api.WaitFor
	live   bool
	st     *command.Status
	events []json.RawMessage
	life   *api.Lifecycle
	seq    int64 // the last seq seen
	// goal is set while the session has a goal not marked done: a turn
	// that ends well is followed by a goal check, which may queue another
	// turn, so idleness waits for the check.
	goal        bool
	goalPending bool
	// capReached is set once the spend cap is known reached: from then
	// on a human wait looks, at each turn's end and queue change, whether
	// it holds messages back.
	capReached bool
}

func (w *waiter) lastSeq() int64 {
	if w.st == nil {
		return w.seq
	}
	return max(w.seq, w.st.LastSeq)
}

// metNow decides a wait without a seq to start from on the session as it
// is, and gathers the events that make it so.
func (w *waiter) metNow() bool {
	switch w.For {
	case api.WaitTurnEnd:
		if w.live && w.st != nil && turnUnderWay(w.st) {
			return false
		}
		w.events = w.fromLog(func(typ string, _ []byte) bool { return typ == string(event.TurnEnded) }, true)
		return true
	case api.WaitIdle:
		if w.live && (w.st == nil || !statusIdle(w.st)) {
			return false
		}
		w.events = w.fromLog(func(typ string, _ []byte) bool { return typ == string(event.TurnEnded) }, true)
		return true
	default: // human
		if w.live && heldQueue(w.st) {
			w.capReached = true
			w.events = w.fromLog(isSpendCapFailure, true)
			return true
		}
		if !w.live || w.st == nil || (len(w.st.OpenAsks) == 0 && len(w.st.PendingEdit) == 0) {
			return false
		}
		w.events = w.fromLog(func(typ string, data []byte) bool {
			var d struct {
				AskID  string `json:"askId"`
				EditID string `json:"editId"`
			}
			switch typ {
			case string(event.AskOpened):
				return json.Unmarshal(data, &d) == nil && slices.Contains(w.st.OpenAsks, d.AskID)
			case string(event.HunkStaged):
				return json.Unmarshal(data, &d) == nil && slices.Contains(w.st.PendingEdit, d.EditID)
			}
			return false
		}, false)
		// The runner counts an ask or an edit open just before its event
		// reaches the log: until the log has every one, the feed (from
		// the status's last seq on) decides, with the event.
		if len(w.events) < len(w.st.OpenAsks)+len(w.st.PendingEdit) {
			w.events = nil
			return false
		}
		return true
	}
}

// fromLog returns the log's events that match (only the last one with
// lastOnly).
func (w *waiter) fromLog(match func(typ string, data []byte) bool, lastOnly bool) []json.RawMessage {
	out := []json.RawMessage{}
	st := newStream(filepath.Join(w.m.dir(w.id), eventsFile), nil, 1, 0, w.m.cfg.MaxLine, w.m.log)
	defer st.Close()
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.m.log.Warn("reading the log for a wait")
			}
			return out
		}
		w.seq = ev.Seq
		if !match(string(ev.Type), eventData(ev.Line)) {
			continue
		}
		if lastOnly {
			out = out[:0]
		}
		out = append(out, bytes.Clone(ev.Line))
	}
}

// eventData returns the data of an event line (nil when it has none).
func eventData(line []byte) []byte {
	var ev struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return nil
	}
	return ev.Data
}

// take looks at one item of the session's feed and reports whether it
// decides the wait.
func (w *waiter) take(ctx context.Context, ev FeedEvent) (bool, error) {
	if ev.Kind == FeedLifecycle {
		var l api.Lifecycle
		if err := json.Unmarshal(ev.Line, &l); err != nil {
			return false, nil
		}
		switch l.Type {
		case api.LifeDeleted:
			return false, notFound(w.id)
		case api.LifeStorageFailed:
			return false, storageUnavailable(w.id)
		case api.LifeFailed, api.LifeReaped:
			// No runner: nothing runs, and no turn ends until one starts.
			w.live, w.life = false, &l
			return w.For != api.WaitHuman, nil
		case api.LifeLive:
			w.live = true
		}
		return false, nil
	}
	if ev.Kind != FeedSessionEvent {
		return false, nil
	}
	w.seq = max(w.seq, lineSeq(ev.Line))
	typ := string(ev.Type)
	switch w.For {
	case api.WaitTurnEnd:
		if typ == string(event.TurnEnded) {
			w.events = []json.RawMessage{bytes.Clone(ev.Line)}
			return true, nil
		}
	case api.WaitHuman:
		if typ == string(event.AskOpened) || (typ == string(event.HunkStaged) && !autoHunk(ev.Line)) {
			w.events = []json.RawMessage{bytes.Clone(ev.Line)}
			return true, nil
		}
		return w.heldNow(ctx, typ, ev.Line)
	case api.WaitIdle:
		if !w.mayBeIdle(typ, ev.Line) {
			return false, nil
		}
		s, err := w.m.Get(ctx, w.id)
		if err != nil {
			return false, err
		}
		w.live, w.st = s.Live, s.Status
		if !s.Live || (s.Status != nil && statusIdle(s.Status)) {
			w.events = []json.RawMessage{bytes.Clone(ev.Line)}
			return true, nil
		}
	}
	return false, nil
}

// mayBeIdle follows the events that can leave a session idle, and reports
// whether the session's status is worth asking after this one.
func (w *waiter) mayBeIdle(typ string, line []byte) bool {
	switch typ {
	case string(event.GoalSet):
		w.goal = true
	case string(event.GoalCleared):
		w.goal, w.goalPending = false, false
		return true
	case string(event.TurnEnded):
		var d event.TurnEndedData
		if w.goal && json.Unmarshal(eventData(line), &d) == nil && d.Outcome == "done" {
			w.goalPending = true
			return false
		}
		return true
	case string(event.GoalCheck):
		w.goalPending = false
		var d event.GoalCheckData
		if json.Unmarshal(eventData(line), &d) != nil {
			return true
		}
		if d.By == "user" {
			w.goal = false
		}
		// An unmet goal queues a goal-check turn next.
		return d.Holds || d.LimitReached
	case string(event.Stopped), string(event.AskAnswered), string(event.HunkDecided),
		string(event.EditApplied), string(event.QueueChanged), string(event.Failure):
		return !w.goalPending
	}
	return false
}

func autoHunk(line []byte) bool {
	var d event.HunkStagedData
	return json.Unmarshal(eventData(line), &d) == nil && d.Auto
}

// lineSeq reads an event line's seq.
func lineSeq(line []byte) int64 {
	seq, _, err := wire.ScanEvent(line)
	if err != nil {
		return 0
	}
	return seq
}

// reply builds the wait's answer with the session's status now.
func (w *waiter) reply(ctx context.Context, met bool) (api.WaitReply, error) {
	r := api.WaitReply{OK: true, For: w.For, Met: met, Events: w.events, Lifecycle: w.life}
	if r.Events == nil {
		r.Events = []json.RawMessage{}
	}
	if s, err := w.m.Get(ctx, w.id); err == nil {
		w.st = s.Status
	}
	r.Status = w.st
	r.LastSeq = w.lastSeq()
	return r, nil
}
