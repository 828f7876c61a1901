package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/engine"
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
	Mirror func(eventlog.Batch)
	// Rotate, when set, is told when the session continues under a new id.
	Rotate func(from, to string)
}

// Runner is one live session.
type Runner struct {
	opts   Options
	log    *zap.Logger
	events atomic.Pointer[eventlog.Log]
	// dir is the session folder; a fork moves the runner to a new one.
	dir  atomic.Pointer[string]
	eng  engine.Engine
	gate *gatekeeper
	// cmds is held for reading by every command that changes the session
	// (and by a timed loop's tick), and for writing by a fork, which must
	// have the session to itself, and by Close, which waits for them.
	cmds sync.RWMutex

	mu          sync.Mutex
	spec        wire.Spec
	state       wire.State
	activity    string
	live        bool
	closed      bool
	turnNo      int
	running     *turn
	queue       []wire.Queued
	steers      []string
	nextID      int
	asks        map[string]*ask
	edits       map[string]*stagedEdit
	usage       wire.UsageData
	spendCapHit bool
	// goalAttempts counts goal checks since the last human message.
	goalAttempts int
	// contextPercent is the engine's last reported context fill.
	contextPercent float64
	wake           chan struct{}
	// stopLoop ends a timed loop.
	stopLoop context.CancelFunc
	// settled is open while a finished turn's goal check runs.
	settled chan struct{}
	// turnDone is signalled (without blocking) whenever a turn ends.
	turnDone chan struct{}
	presence *presenceWriter
	loopDone chan struct{}
	// background is the work the runner starts on its own (the stop a
	// crossed spend cap makes); Close cancels its context and waits.
	background       sync.WaitGroup
	backgroundCtx    context.Context
	cancelBackground context.CancelFunc
	// specStored is closed once the spec Start stores is in meta.json;
	// the first turn and every later spec change wait for it.
	specStored chan struct{}
}

// turn is the turn in progress.
type turn struct {
	no      int
	msg     wire.Queued
	kind    string
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
	usage   wire.UsageData
	files   map[string]bool
	added   int
	removed int
	start   time.Time
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
	if err := validateLoop(spec); err != nil {
		return nil, err
	}
	if _, ok := opts.Engines[spec.Engine]; !ok && opts.Engines["plugin"] == nil {
		return nil, wire.Errorf(wire.CodeBadRequest,
			"unknown engine %q: it is not built in, and this runner build has no plugin engines (plugin-runner has)", spec.Engine)
	}
	bgCtx, cancelBg := context.WithCancel(context.Background())
	r := &Runner{
		backgroundCtx: bgCtx, cancelBackground: cancelBg,
		opts:     opts,
		log:      opts.Logger,
		spec:     spec,
		state:    wire.StateStarting,
		asks:     map[string]*ask{},
		edits:    map[string]*stagedEdit{},
		wake:     make(chan struct{}, 1),
		turnDone: make(chan struct{}, 1),
		loopDone: make(chan struct{}),
		specStored: func() chan struct{} {
			c := make(chan struct{})
			close(c)
			return c
		}(),
	}
	gk, err := newGatekeeper(spec)
	if err != nil {
		return nil, err
	}
	r.gate = gk
	events, err := eventlog.Open(filepath.Join(opts.Dir, EventsFile), eventlog.Options{Written: r.written})
	if err != nil {
		return nil, err
	}
	r.events.Store(events)
	dir := opts.Dir
	r.dir.Store(&dir)
	r.presence = newPresenceWriter(func() string { return filepath.Join(r.Dir(), PresenceFile) }, r.status, r.log)
	// A folder without meta.json gets one now; otherwise Start writes
	// the spec once, with the engine's conversation id.
	if !haveMeta {
		if err := WriteSpec(opts.Dir, spec); err != nil {
			events.Close()
			return nil, err
		}
	}
	return r, nil
}

// evlog is the session's event log.
func (r *Runner) evlog() *eventlog.Log { return r.events.Load() }

// Dir is the session folder.
func (r *Runner) Dir() string { return *r.dir.Load() }

// saveSpec writes the session's meta.json, after the write Start began.
func (r *Runner) saveSpec(spec wire.Spec) error {
	r.waitSpecStored()
	return WriteSpec(r.Dir(), spec)
}

// waitSpecStored waits for the spec Start stores.
func (r *Runner) waitSpecStored() {
	r.mu.Lock()
	stored := r.specStored
	r.mu.Unlock()
	<-stored
}

func (r *Runner) written(b eventlog.Batch) {
	if r.opts.Mirror != nil {
		r.opts.Mirror(b)
	}
}

// Spec returns the session's current configuration.
func (r *Runner) Spec() wire.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spec
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
	eng, convID, err := r.startEngine(ctx, spec)
	if err != nil {
		r.fail(err)
		r.setState(wire.StateFailed, "engine did not start")
		return engineErr(err)
	}
	stored := make(chan struct{})
	r.mu.Lock()
	r.eng = eng
	r.live = true
	r.spec.EngineSession = convID
	spec = r.spec
	r.state = wire.StateIdle
	r.specStored = stored
	r.mu.Unlock()
	// The durable write of meta.json (with the engine's conversation id,
	// which a resume needs) takes about as long as the rest of a start, so
	// the session opens while it is under way; nothing can need it before
	// the first turn, which waits for it.
	dir := r.Dir()
	go func() {
		defer close(stored)
		if err := WriteSpec(dir, spec); err != nil {
			r.log.Warn("store engine session id", zap.Error(err))
		}
	}()
	typ := wire.EvSessionStarted
	if resumed {
		typ = wire.EvSessionResumed
	}
	r.emit(typ, wire.SessionStartedData{
		Engine: spec.Engine, Cwd: spec.Cwd, Mode: spec.Mode, Model: spec.Model,
		EngineSession: convID, Parent: spec.Parent, Unattended: spec.Unattended,
	})
	r.presence.touch()
	go r.loop()
	if err := r.inherit(); err != nil {
		r.log.Warn("inherit from parent session", zap.Error(err))
	}
	if spec.Loop != nil {
		ctx, cancel := context.WithCancel(context.Background())
		r.mu.Lock()
		r.stopLoop = cancel
		r.mu.Unlock()
		go r.runLoop(ctx, *spec.Loop)
	}
	return nil
}

// startEngine starts or resumes the engine conversation spec names.
func (r *Runner) startEngine(ctx context.Context, spec wire.Spec) (engine.Engine, string, error) {
	config := maps.Clone(r.opts.EngineConfig)
	if config == nil {
		config = map[string]string{}
	}
	if spec.PluginPath != "" {
		config["pluginPath"] = spec.PluginPath
	}
	factory, ok := r.opts.Engines[spec.Engine]
	if !ok {
		// An engine name Corral does not know is a plugin's, looked up
		// in the plugins folder.
		factory = r.opts.Engines["plugin"]
		config["plugin"] = spec.Engine
	}
	eng := factory()
	convID, err := eng.Start(ctx, engine.StartOptions{
		SessionID:     spec.ID,
		Dir:           r.Dir(),
		Cwd:           spec.Cwd,
		Model:         spec.Model,
		ModelEndpoint: spec.ModelEndpoint,
		Resume:        spec.EngineSession,
		Scenario:      spec.Scenario,
		Credentials:   r.opts.Credentials,
		Env:           r.opts.Env,
		Config:        config,
		Host:          (*host)(r),
		Logger:        r.log.Named("engine"),
	})
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
	live := r.live
	r.mu.Unlock()
	if live {
		r.stop(context.Background(), "shutdown")
		// Let a command under way (a fork starting an engine) finish;
		// none starts from now on.
		r.cmds.Lock()
		r.mu.Lock()
		r.notify()
		r.mu.Unlock()
		<-r.loopDone
		r.cancelBackground()
		r.background.Wait()
		r.eng.Close()
	}
	r.cancelBackground()
	r.presence.close()
	return r.evlog().Close()
}

// Sync flushes and fsyncs the event log.
func (r *Runner) Sync() error { return r.evlog().Sync() }

// Flush waits until every event so far reached the log and the mirror.
func (r *Runner) Flush() error { return r.evlog().Flush() }

// emit appends an event, logging (not returning) a failure: an event that
// cannot be recorded must not take the session down with it.
func (r *Runner) emit(typ wire.EventType, data any) {
	if _, err := r.evlog().Append(typ, data); err != nil {
		r.log.Error("append event", zap.String("type", string(typ)), zap.Error(err))
	}
}

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

func (r *Runner) newID(prefix string) string {
	r.nextID++
	return prefix + strconv.Itoa(r.nextID)
}

// notify wakes the turn loop; r.mu must be held.
func (r *Runner) notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) setState(s wire.State, activity string) {
	r.mu.Lock()
	r.state, r.activity = s, activity
	r.mu.Unlock()
	r.presence.touch()
}

// fail records a failure event for err.
func (r *Runner) fail(err error) {
	d := wire.FailureData{Code: wire.FailEngineError, Message: err.Error(), Action: "Send another message to retry; the session resumes where it stopped."}
	var f *engine.Failure
	if errors.As(err, &f) {
		d.Code, d.Message, d.Stderr = f.Code, f.Error(), f.Stderr
		d.Action = actionFor(f.Code)
	}
	r.emit(wire.EvFailure, d)
}

func actionFor(code wire.FailureCode) string {
	switch code {
	case wire.FailSignInExpired:
		return "Store a valid key with the keyring item for this engine (or the credentials file), then send again."
	case wire.FailContextFull:
		return "Start a new session that inherits this one, or clear the conversation."
	case wire.FailSpendCap:
		return "Raise the spend cap (setSpendCap) to continue."
	case wire.FailPermissionUnavailable:
		return "Allow the command in the session's or project's allowlist, or run the session attended."
	default:
		return "Send another message to retry; the session resumes where it stopped."
	}
}
