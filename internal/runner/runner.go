package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/wire"
)

// Named timeouts.
const (
	// interruptGrace is how long a stop waits for the engine to end the
	// turn through its own protocol before the turn's context is cancelled.
	interruptGrace = 10 * time.Second
	// stopWait bounds how long the stop command waits for the turn to end.
	stopWait = 20 * time.Second
)

// Options configure a Runner.
type Options struct {
	// Dir is the session folder.
	Dir string
	// Spec is the session's configuration; when its ID is empty the
	// folder's meta.json is used.
	Spec wire.Spec
	// Engines maps engine names to factories.
	Engines map[string]engine.Factory
	// Credentials are handed to the engine.
	Credentials map[string]string
	// EngineConfig holds engine-specific settings (see engine.StartOptions).
	EngineConfig map[string]string
	// Env is the base environment for engine children (already cleaned).
	Env []string
	// Logger logs to stderr; nil means no logging.
	Logger *zap.Logger
	// Mirror, when set, receives every event line after it reached
	// events.jsonl (the supervisor's copy). It must copy what it keeps.
	// It runs on the goroutine that recorded the event, which may hold a
	// lock of the runner's (doc.go): it must not call the Runner.
	Mirror func(eventlog.Batch)
	// Rotate, when set, is told when the session continues under a new id.
	Rotate func(from, to string)
	// Report, when set, is told what the session is doing whenever that
	// changes (stateReporter).
	Report func(wire.StateReport)
	// Warm is an engine started ahead for this session (Prewarm). The
	// runner starts its conversation in it when the session starts anew
	// on that engine in that folder, and closes it otherwise; either way
	// the Runner owns it from New on.
	Warm *WarmEngine
}

// Runner is one live session: the coordinator of its parts (doc.go). It
// keeps the engine, the session's spec and state, and decides what happens
// when and in what order; each part keeps its own state behind its own
// lock.
type Runner struct {
	opts Options
	log  *zap.Logger

	store      *store
	storage    *storageGuard
	requests   *requestLog
	gate       *gatekeeper
	ids        idSource
	turns      *turnQueue
	asks       *askBroker
	review     *review
	shell      *shellCapture
	verdicts   gateVerdicts
	meter      *meter
	compaction *compaction
	goal       *goalPolicy
	// policies run at every turn end, in order.
	policies []turnEndPolicy
	presence *presenceWriter

	// cmds is held for reading by every command that changes the session
	// (and by a timed loop's tick), and for writing by a fork, which must
	// have the session to itself, and by Close, which waits for them.
	cmds sync.RWMutex

	// mu guards the fields below. A transition that spans them and a
	// part (the state with the turn queue, say) holds mu while it calls
	// the part: mu comes before every part's lock.
	mu       sync.Mutex
	spec     wire.Spec
	state    wire.State
	activity string
	live     bool
	closed   bool
	eng      engine.Engine
	timed    *timedLoop // nil without a timed loop
	// rotating is open while the turn loop moves the session to a new id
	// after a clear (clear.go); Close waits for it.
	rotating chan struct{}

	// loopDone is closed when the turn loop returns; turnDone is
	// signalled (without blocking) whenever a turn has settled.
	loopDone chan struct{}
	turnDone chan struct{}
	// background is the work the runner starts on its own (the stop a
	// crossed spend cap makes); Close cancels its context and waits.
	background       sync.WaitGroup
	backgroundCtx    context.Context
	cancelBackground context.CancelFunc
}

// New opens the session folder and its event log. The engine is not
// started until Start.
func New(opts Options) (*Runner, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("session folder: %w", err)
	}
	spec := opts.Spec
	stored, haveMeta, err := ReadSpec(opts.Dir)
	if err != nil {
		return nil, err
	} else if haveMeta {
		if spec.ID == "" {
			spec = stored
		} else if spec.EngineSession == "" {
			spec.EngineSession = stored.EngineSession
		}
	}
	if spec.ID == "" {
		spec.ID = filepath.Base(opts.Dir)
	}
	if spec.Engine == "" {
		spec.Engine = "script"
	}
	if spec.Mode == "" {
		spec.Mode = "review"
	}
	if spec.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("session cwd: %w", err)
		}
		spec.Cwd = wd
	}
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if err := spec.EngineConfig.Check(); err != nil {
		return nil, err
	}
	if _, ok := opts.Engines[spec.Engine]; !ok && opts.Engines["plugin"] == nil {
		return nil, wire.Errorf(wire.CodeBadRequest,
			"unknown engine %q: it is not built in, and this runner build has no plugin engines (plugin-runner has)", spec.Engine)
	}
	gk, err := newGatekeeper(spec)
	if err != nil {
		return nil, err
	}
	guard := newStorageGuard()
	st, err := openStore(opts.Dir, opts.Mirror, guard.fail, opts.Logger)
	if err != nil {
		return nil, err
	}
	bgCtx, cancelBg := context.WithCancel(context.Background())
	r := &Runner{
		opts:     opts,
		log:      opts.Logger,
		store:    st,
		storage:  guard,
		requests: newRequestLog(),
		gate:     gk,
		meter:    newMeter(spec.SpendCapUSD),
		spec:     spec,
		state:    wire.StateStarting,

		loopDone:         make(chan struct{}),
		turnDone:         make(chan struct{}, 1),
		backgroundCtx:    bgCtx,
		cancelBackground: cancelBg,
	}
	// The queue is held while the spend cap is reached and while the
	// storage is down (no turn starts that the log cannot record).
	r.turns = newTurnQueue(&r.ids, func() bool { return guard.down.Load() || r.meter.reached() })
	r.turns.changed = func(d event.QueueChangedData) { r.emit(event.QueueChanged, d) }
	r.asks = newAskBroker(st.emit)
	r.shell = newShellCapture(spec.Cwd, opts.Dir, r.log)
	r.review = newReview(spec.Cwd, st.emit, r.shell)
	ph := policyRunner{r}
	r.compaction = &compaction{host: ph}
	r.goal = &goalPolicy{host: ph, log: r.log}
	r.policies = []turnEndPolicy{spendCapPolicy{meter: r.meter, host: ph}, r.compaction, r.goal}
	r.presence = newPresenceWriter(func() string { return filepath.Join(r.Dir(), PresenceFile) }, r.status, r.log)
	reports := &stateReporter{send: opts.Report}
	r.presence.changed = func() { reports.report(r.stateReport) }
	// A folder without meta.json gets one now; otherwise Start writes
	// the spec once, with the engine's conversation id.
	if !haveMeta {
		if err := WriteSpec(opts.Dir, spec); err != nil {
			st.close()
			return nil, err
		}
	}
	r.watchStorage()
	return r, nil
}

// evlog is the session's event log.
func (r *Runner) evlog() *eventlog.Log { return r.store.eventLog() }

// Dir is the session folder.
func (r *Runner) Dir() string { return r.store.Dir() }

// Spec returns the session's current configuration.
func (r *Runner) Spec() wire.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spec
}

// updateSpec changes the spec with change and returns the result, for the
// caller to store.
func (r *Runner) updateSpec(change func(*wire.Spec)) wire.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.spec)
	return r.spec
}

// engine is the session's engine.
func (r *Runner) engine() engine.Engine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.eng
}

// Start makes the session live: it closes whatever a previous runner left
// open in the log, starts or resumes the engine conversation, and starts the
// turn loop. It is idempotent.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.live {
		r.mu.Unlock()
		return nil
	}
	if r.closed {
		r.mu.Unlock()
		return wire.Errorf(wire.CodeUnavailable, "session %s is shutting down", r.spec.ID)
	}
	spec := r.spec
	r.mu.Unlock()

	resumed := r.evlog().LastSeq() > 0
	if resumed {
		if err := r.closeLeftovers(); err != nil {
			return err
		}
	}
	var eng engine.Engine
	var convID, forkedFrom string
	var err error
	if spec.Parent != "" && spec.EngineSession == "" {
		eng, convID, forkedFrom, err = r.startInherited(ctx, spec)
	} else {
		eng, convID, err = r.startEngine(ctx, spec)
	}
	if err != nil {
		r.fail(err)
		r.setState(wire.StateFailed, "engine did not start")
		return engineErr(err)
	}
	r.mu.Lock()
	r.eng = eng
	r.live = true
	r.spec.EngineSession = convID
	spec = r.spec
	r.state = wire.StateIdle
	// The durable write of meta.json (with the engine's conversation id,
	// which a resume needs) takes about as long as the rest of a start, so
	// the session opens while it is under way; nothing can need it before
	// the first turn, which waits for it. It begins before the session is
	// live to commands, whose own writes of the spec wait for it.
	r.store.saveSpecInBackground(spec)
	r.mu.Unlock()
	if gate.Mode(spec.Mode) != gate.ModeReadonly {
		r.shell.open() // in the background; the first shell call waits for it
	}
	typ := event.SessionStarted
	if resumed {
		typ = event.SessionResumed
	}
	r.emit(typ, event.SessionStartedData{
		Engine: spec.Engine, Cwd: spec.Cwd, Mode: spec.Mode, Model: spec.Model,
		EngineSession: convID, Parent: spec.Parent, ForkedFrom: forkedFrom, Unattended: spec.Unattended,
	})
	r.presence.touch()
	go r.runTurns()
	if forkedFrom == "" {
		if err := r.inherit(); err != nil {
			r.log.Warn("inherit from parent session", zap.Error(err))
		}
	}
	if spec.Loop != nil {
		prompt := spec.Loop.Prompt
		tl := startTimedLoop(*spec.Loop, func() bool { return r.tickLoop(prompt) })
		r.mu.Lock()
		r.timed = tl
		r.mu.Unlock()
	}
	return nil
}

// startEngine starts or resumes the engine conversation spec names.
func (r *Runner) startEngine(ctx context.Context, spec wire.Spec) (engine.Engine, string, error) {
	return r.startEngineWith(ctx, spec, nil)
}

// startEngineWith starts the engine spec names through start, or through
// its Start when start is nil or declines (returns ok false).
func (r *Runner) startEngineWith(ctx context.Context, spec wire.Spec, start func(engine.Engine, engine.StartOptions) (conv string, ok bool, err error)) (engine.Engine, string, error) {
	factory, opts := engineStart(r.opts, spec, r.Dir())
	opts.Host = (*host)(r)
	opts.Logger = r.log.Named("engine")
	// An engine started ahead for this folder (prewarm.go) serves a new
	// conversation; a resume, a fork or an inherited start gets a new one.
	var eng engine.Engine
	if warm := r.takeWarm(); warm != nil {
		if start == nil && spec.EngineSession == "" && warm.fits(spec.Engine, r.Dir()) {
			eng = warm.eng
		} else {
			warm.Close()
		}
	}
	if eng == nil {
		eng = factory()
	}
	if err := checkPreset(eng, spec); err != nil {
		eng.Close()
		return nil, "", err
	}
	var convID string
	var err error
	started := false
	if start != nil {
		convID, started, err = start(eng, opts)
	}
	if !started && err == nil {
		convID, err = eng.Start(ctx, opts)
	}
	if err != nil {
		eng.Close()
		return nil, "", err
	}
	// A plugin's abilities are known only once it runs: drive the engine
	// it hands back, which claims exactly the optional interfaces it has.
	if s, ok := eng.(interface{ Started() engine.Engine }); ok {
		eng = s.Started()
	}
	return eng, convID, nil
}

// checkPreset refuses, with bad_request, a spec whose agent preset the
// engine cannot honour.
func checkPreset(eng engine.Engine, spec wire.Spec) error {
	if spec.Agent == nil {
		return nil
	}
	p, ok := eng.(engine.Presetter)
	if !ok {
		return wire.Errorf(wire.CodeBadRequest, "the %s engine cannot take an agent preset (instructions or tools)", spec.Engine)
	}
	if err := p.CheckPreset(*spec.Agent); err != nil {
		return wire.Errorf(wire.CodeBadRequest, "the %s engine cannot take this agent preset: %v", spec.Engine, err)
	}
	return nil
}

// engineErr turns an engine's start or turn error into a wire error.
func engineErr(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return err
	}
	return wire.Errorf(wire.CodeEngineError, "%v", err)
}

// Close stops the running turn, closes the engine and syncs the log. Open
// asks and pending hunks are answered (by "shutdown") so the log holds a
// terminal answer for each.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	live, rotating := r.live, r.rotating
	r.mu.Unlock()
	if warm := r.takeWarm(); warm != nil {
		warm.Close() // never started: the session did not start
	}
	r.closeStorage()
	if live {
		if rotating != nil {
			<-rotating
		}
		r.stop(context.Background(), "shutdown")
		// Let a command under way (a fork starting an engine) finish;
		// none starts from now on.
		r.cmds.Lock()
		r.turns.close()
		<-r.loopDone
		r.cancelBackground()
		r.background.Wait()
		r.engine().Close()
	}
	r.cancelBackground()
	r.shell.close()
	r.presence.close()
	return r.store.close()
}

// Sync flushes and fsyncs the event log.
func (r *Runner) Sync() error { return r.evlog().Sync() }

// Flush waits until every event so far reached the log and the mirror.
func (r *Runner) Flush() error { return r.evlog().Flush() }

// emit records an event (see store.emit).
func (r *Runner) emit(typ event.Type, data any) { r.store.emit(typ, data) }

// goBackground runs fn on its own goroutine, which Close cancels (through
// fn's context) and waits for; once Close has begun it does nothing, since
// Close does what the runner would otherwise do on its own.
func (r *Runner) goBackground(fn func(context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.background.Go(func() { fn(r.backgroundCtx) })
}

func (r *Runner) setState(s wire.State, activity string) {
	r.mu.Lock()
	r.state, r.activity = s, activity
	r.mu.Unlock()
	r.presence.touch()
}

// fail records a failure event for err.
func (r *Runner) fail(err error) {
	d := event.FailureData{Code: event.FailEngineError, Message: err.Error(), Action: "Send another message to retry; the session resumes where it stopped."}
	var f *engine.Failure
	if errors.As(err, &f) {
		d.Code, d.Message, d.Stderr = f.Code, f.Error(), f.Stderr
		d.Action = actionFor(f.Code)
	}
	r.emit(event.Failure, d)
}

func actionFor(code event.FailureCode) string {
	switch code {
	case event.FailSignInExpired:
		return "Store a valid key with the keyring item for this engine (or the credentials file), then send again."
	case event.FailContextFull:
		return "Start a new session that inherits this one, or clear the conversation."
	case event.FailSpendCap:
		return "Raise the spend cap (setSpendCap) to continue."
	case event.FailPermissionUnavailable:
		return "Allow the command in the session's or project's allowlist, or run the session attended."
	default:
		return "Send another message to retry; the session resumes where it stopped."
	}
}
