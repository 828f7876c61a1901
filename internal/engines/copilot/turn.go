package copilot

import (
	"context"
	"encoding/json"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// turn is the state of one running turn. Its fields are guarded by the
// engine's mu.
type turn struct {
	ctx    context.Context // cancelled when the turn ends; permission asks derive from it
	cancel context.CancelFunc
	done   chan struct{} // closed once, by whoever sets finished

	accepted     bool   // the CLI answered session.send: idles from now on may be this turn's
	messageID    string // the CLI's id of the turn's message
	finished     bool
	stopping     bool // Interrupt (or the turn's context) asked for a stop
	abortAcked   bool // the CLI answered session.abort
	aborted      bool // the CLI reported the turn aborted
	idleDeferred bool // an idle came while a steer was still on its way

	steersInFlight int
	steers         map[string]bool // sent steers the CLI has not started on yet
	steerIDs       map[string]bool // every steer the CLI took
	seen           map[string]bool // user messages the CLI started on

	text     string
	usage    event.UsageData
	hasUsage bool
	retries  int
	failure  error

	tools     map[string]*toolRun // started, not finished
	toolOrder []string
	toolNames map[string]string // every tool call of the turn, by id
	denied    map[string]string // refused tool calls and the feedback given
}

type toolRun struct {
	name  string
	start time.Time
}

func (r *toolRun) elapsed() int64 { return time.Since(r.start).Milliseconds() }

func newTurn(ctx context.Context) *turn {
	tctx, cancel := context.WithCancel(ctx)
	return &turn{
		ctx:       tctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		steers:    map[string]bool{},
		steerIDs:  map[string]bool{},
		seen:      map[string]bool{},
		tools:     map[string]*toolRun{},
		toolNames: map[string]string{},
		denied:    map[string]string{},
	}
}

// finishLocked marks t finished and reports whether this call did so; the
// caller then closes t.done, after the engine's mu is released.
func (e *Engine) finishLocked(t *turn) bool {
	if t.finished {
		return false
	}
	t.finished = true
	return true
}

// effects collects what handling an event causes, to be carried out once
// the engine's mu is released: the runner's Host is never called under it.
type effects struct {
	emits  []emission
	finish *turn
	tasks  []func()
}

type emission struct {
	typ  event.Type
	data any
}

func (fx *effects) emit(typ event.Type, data any) {
	fx.emits = append(fx.emits, emission{typ, data})
}

func (fx *effects) flush(host engine.Host) {
	for _, em := range fx.emits {
		host.Emit(em.typ, em.data)
	}
}

// onNotify handles the CLI's notifications, in stream order.
func (e *Engine) onNotify(c *cli, method string, params json.RawMessage) {
	if method != notifySessionEvent {
		return // session.lifecycle, host.event: nothing a turn needs
	}
	var p sessionEventParams
	if err := json.Unmarshal(params, &p); err != nil {
		e.log.Warn("undecodable session event", zap.Error(err))
		return
	}
	fx := &effects{}
	e.mu.Lock()
	if q := e.side[p.SessionID]; q != nil && c == q.c {
		e.mu.Unlock()
		q.onEvent(p.Event)
		return
	}
	if c != e.cli || p.SessionID != e.sessionID {
		e.mu.Unlock()
		return
	}
	e.handleEventLocked(c, p.Event, fx)
	host := e.host
	e.mu.Unlock()
	fx.flush(host)
	if fx.finish != nil {
		close(fx.finish.done)
	}
	for _, f := range fx.tasks {
		e.spawn(f)
	}
}

// activeTurnLocked is the running turn, or nil between turns.
func (e *Engine) activeTurnLocked() *turn {
	if t := e.turn; t != nil && !t.finished {
		return t
	}
	return nil
}

// ownsRunLocked reports whether the agent loop now running in the CLI is
// t's: the last user message the CLI started on is the turn's own or one of
// its steers. A loop that is not (a late steer's, ahead of the turn's
// message in the CLI's queue) is left to run out; its events are not the
// turn's. While the answer cannot be known yet, the turn is assumed.
func (e *Engine) ownsRunLocked(t *turn) bool {
	switch id := e.lastUser; {
	case id == "", t.messageID == "", t.steersInFlight > 0:
		return true
	default:
		return id == t.messageID || t.steerIDs[id]
	}
}

// handleEventLocked maps one session event.
func (e *Engine) handleEventLocked(c *cli, ev sessionEvent, fx *effects) {
	decode := func(v any) bool {
		if err := json.Unmarshal(ev.Data, v); err != nil {
			e.log.Warn("undecodable session event", zap.String("type", ev.Type), zap.Error(err))
			return false
		}
		return true
	}
	var user userMessageData
	if ev.Type == evUserMessage {
		if !decode(&user) {
			return
		}
		e.lastUser = user.MessageID
	}
	active := e.activeTurnLocked()
	// t is the turn this event belongs to, or nil.
	t := active
	if t != nil && !e.ownsRunLocked(t) {
		t = nil
	}

	switch ev.Type {
	case evUserMessage, evAssistantTurnStart:
		if active == nil {
			e.stopUnownedLocked(c, fx)
			return
		}
		if user.MessageID != "" {
			active.seen[user.MessageID] = true
			if active.steers[user.MessageID] {
				delete(active.steers, user.MessageID)
				active.idleDeferred = false // the steer runs now; its idle ends the turn
			}
		}
		if t == nil && ev.Type == evUserMessage {
			e.log.Info("the CLI runs a message ahead of the turn's; waiting for it", zap.String("message", user.MessageID))
		}
		if active.stopping && active.abortAcked {
			// A run that began after the abort (the send was still queued)
			// is stopped too.
			active.abortAcked = false
			fx.tasks = append(fx.tasks, func() {
				ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
				defer cancel()
				_ = e.abort(ctx, c, active)
			})
		}

	case evAssistantDelta:
		var d assistantDeltaData
		if t != nil && decode(&d) && d.ParentToolCallID == "" && d.DeltaContent != "" {
			fx.emit(event.AssistantDelta, event.TextData{Text: d.DeltaContent})
		}

	case evAssistantMessage:
		var d assistantMessageData
		if t != nil && decode(&d) && d.ParentToolCallID == "" && d.Content != "" {
			t.text = d.Content
			fx.emit(event.AssistantText, event.TextData{Text: d.Content})
		}

	case evToolStart:
		var d toolStartData
		if t == nil || !decode(&d) {
			return
		}
		t.tools[d.ToolCallID] = &toolRun{name: d.ToolName, start: time.Now()}
		t.toolOrder = append(t.toolOrder, d.ToolCallID)
		t.toolNames[d.ToolCallID] = d.ToolName
		fx.emit(event.ToolStarted, toolStarted(d, e.set.cwd))

	case evToolComplete:
		var d toolCompleteData
		if t == nil || !decode(&d) {
			return
		}
		run, ok := t.tools[d.ToolCallID]
		if !ok {
			return
		}
		delete(t.tools, d.ToolCallID)
		fx.emit(event.ToolFinished, toolFinished(d, run, t.denied))

	case evAssistantUsage:
		var d assistantUsageData
		if t == nil || !decode(&d) {
			return
		}
		u := event.UsageData{
			InputTokens:      d.InputTokens,
			OutputTokens:     d.OutputTokens,
			CacheReadTokens:  d.CacheReadTokens,
			CacheWriteTokens: d.CacheWriteTokens,
			Estimated:        true,
			Model:            d.Model,
		}
		u.CostUSD = estimateCost(u)
		t.usage.Add(u)
		t.usage.Model = u.Model
		t.hasUsage = true
		fx.emit(event.Usage, u)

	case evAssistantTurnRetry:
		var d turnRetryData
		if t == nil || !decode(&d) {
			return
		}
		t.retries++
		fx.emit(event.Retry, event.RetryData{Attempt: t.retries, Error: d.Reason})

	case evUsageInfo:
		var d usageInfoData
		if t == nil || !decode(&d) || d.TokenLimit <= 0 {
			return
		}
		fx.emit(event.Context, event.ContextData{
			UsedTokens:   d.CurrentTokens,
			WindowTokens: d.TokenLimit,
			Percent:      100 * float64(d.CurrentTokens) / float64(d.TokenLimit),
		})

	case evSessionError:
		var d sessionErrorData
		if t != nil && t.accepted && decode(&d) {
			t.failure = sessionFailure(d)
		}

	case evAbort:
		if active != nil && (t != nil || active.stopping) {
			active.aborted = true
		}

	case evPermissionRequested:
		var d permissionRequestedData
		if decode(&d) {
			// A request of a run that is not the turn's is refused.
			e.permissionRequestedLocked(c, t, d, fx)
		}

	case evPermissionCompleted:
		var d permissionCompletedData
		if decode(&d) {
			if p := e.perms[d.RequestID]; p != nil {
				p.completed = true
				p.cancel()
			}
		}

	case evSessionIdle:
		var d sessionIdleData
		decode(&d)
		e.lastUser = ""
		e.clearUnownedLocked()
		switch {
		case active == nil || !active.accepted:
			return // no turn, or an idle from before the CLI took its message
		case d.Aborted && active.stopping:
			// Whichever run the abort ended, the stop is done.
			active.aborted = true
		case t == nil:
			return // a run ahead of the turn's ended; the turn's comes next
		case d.Aborted:
			t.aborted = true
		case !t.aborted && (t.steersInFlight > 0 || len(t.steers) > 0):
			t.idleDeferred = true
			return
		}
		if e.finishLocked(active) {
			fx.finish = active
		}
	}
}

// stopUnownedLocked aborts an agent loop that no turn started: a steer
// that reached the CLI only after its turn had ended starts one. Nothing
// would answer its permission requests, and the next turn must not mingle
// with it.
func (e *Engine) stopUnownedLocked(c *cli, fx *effects) {
	if e.unowned {
		return
	}
	e.unowned = true
	e.unownedDone = make(chan struct{})
	e.log.Warn("the CLI started an agent loop outside a turn; aborting it")
	id := e.sessionID
	fx.tasks = append(fx.tasks, func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := c.conn.Call(ctx, methodSessionAbort, sessionIDParams{SessionID: id}, nil); err != nil {
			e.log.Warn("abort of a stray agent loop", zap.Error(err))
		}
	})
}

func (e *Engine) clearUnownedLocked() {
	if e.unowned {
		e.unowned = false
		close(e.unownedDone)
	}
}
