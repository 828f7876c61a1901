package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// Link is a runner process's side of the wire protocol: it reads the
// supervisor's messages from in, writes replies, mirrored events and state
// reports to out, and builds the Runner when the supervisor makes the
// session live.
type Link struct {
	// Build creates the runner for a live.ensure; the Link sets its
	// Mirror and Rotate hooks before calling it.
	Build func(spec wire.Spec, creds map[string]string, opts Options) (*Runner, error)
	// Options are the template for Build.
	Options Options
	// OnLive is called once the runner is live (to start control.sock),
	// and again after a fork moved it to a new session folder.
	OnLive func(*Runner)
	// Terminals handles term.* messages; nil answers term.open with
	// term.error.
	Terminals TerminalHandler
	Log       *zap.Logger
	// Prewarm starts an engine ahead of its session (a spare's
	// prewarm); nil uses the package's Prewarm with Options.
	Prewarm func(ctx context.Context, m *wire.Prewarm, opts Options) (*WarmEngine, error)
	// Grace, when positive, keeps a live session running when its
	// supervisor goes away (the link's input ends): the link then waits
	// this long for another supervisor to re-attach (Attach) before it
	// closes the runner, as a shutdown would. Zero closes it at once.
	Grace time.Duration

	// out is the supervisor's side: its encoder (nil while no
	// supervisor is attached), what it is owed, and what it must get
	// again when it re-attaches. Every write to the supervisor holds
	// outMu, so a re-attach's replay and the live mirror cannot
	// interleave.
	outMu     sync.Mutex
	enc       *wire.Encoder
	mirrored  int64 // seq of the last event line handed to mirrorBatch
	skipBelow int64 // event lines below this seq the supervisor has already
	lastState *wire.StateReport
	mirror    []byte
	next      *wire.Encoder // a re-attached supervisor's, until its hello

	attachOnce sync.Once
	attach     chan Attachment
	quietOnce  sync.Once
	quiet      chan struct{} // see quietCh
	orphaned   atomic.Bool   // Serve ended with no supervisor (Orphaned)

	mu       sync.Mutex
	r        *Runner
	ensuring bool
	wg       sync.WaitGroup
	// warm is the engine a prewarm started, until a live.ensure takes
	// it; warming is open while a prewarm runs, and stopWarming cancels
	// it.
	warm        *WarmEngine
	warming     chan struct{}
	stopWarming context.CancelFunc
}

// TerminalHandler serves the term.* messages of one session.
type TerminalHandler interface {
	// Handle serves a *wire.TermOpen (whose request id is reqID), or a
	// *wire.TermInput, TermResize, TermClose or TermAck; replies and
	// output go through send.
	Handle(ctx context.Context, reqID string, m wire.Message, send Sender)
	// Active reports whether any client is attached (the runner must not
	// be reaped).
	Active() bool
	// Detach lets go of every client of the supervisor that went away:
	// attached clients are detached and exported terminals taken back,
	// so no program waits for a reader that is gone.
	Detach()
	Close()
}

// Sender writes one message to the supervisor, with the request id it
// answers ("" for a message that answers none).
type Sender func(reqID string, m wire.Message)

// Serve runs the protocol until a shutdown message or the end of in (the
// supervisor is gone); either way the runner is closed cleanly. With a
// Grace, a live session outlives the end of in: Serve waits for a
// supervisor to re-attach and serves it on its connection, again and
// again, until a shutdown, ctx's end, or a Grace without one.
func (l *Link) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if l.Log == nil {
		l.Log = zap.NewNop()
	}
	defer l.closeRunner()
	l.setEncoder(wire.NewEncoder(out))
	var conn io.ReadWriteCloser
	for {
		err := l.serve(ctx, in, conn != nil)
		if conn != nil {
			conn.Close()
		}
		if !errors.Is(err, errSupervisorGone) {
			return err
		}
		if conn = l.await(ctx); conn == nil {
			l.orphaned.Store(true)
			return nil
		}
		in = conn
		l.pending(conn)
	}
}

// errSupervisorGone ends serving one supervisor whose link ended while the
// session is to outlive it.
var errSupervisorGone = errors.New("supervisor went away")

// serve reads one supervisor's messages until its link ends. A re-attached
// supervisor's first message must be its hello.
func (l *Link) serve(ctx context.Context, in io.Reader, reattached bool) error {
	dec := wire.NewDecoder(in, 0)
	for first := true; ; first = false {
		m, reqID, err := dec.Decode()
		var le *wire.LineError
		switch {
		case errors.As(err, &le):
			l.Log.Warn("skipped a bad line from the supervisor", zap.Error(le))
			continue
		case errors.Is(err, io.EOF) || (reattached && err != nil):
			if l.outlives() {
				l.detach()
				return errSupervisorGone
			}
			l.Log.Info("supervisor closed stdin; shutting down")
			return nil
		case err != nil:
			return fmt.Errorf("read from supervisor: %w", err)
		}
		if _, ok := m.(*wire.Hello); !ok && first && reattached {
			l.Log.Warn("a re-attaching supervisor did not start with hello; dropped", zap.String("t", string(m.Type())))
			l.detach()
			return errSupervisorGone
		}
		if _, ok := m.(*wire.Shutdown); ok {
			l.closeRunner()
			l.send(reqID, &wire.Bye{})
			return nil
		}
		l.handle(ctx, reqID, m)
	}
}

// send writes one message to the supervisor, if one is attached.
func (l *Link) send(reqID string, m wire.Message) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	if l.enc == nil {
		return
	}
	if err := l.enc.EncodeID(reqID, m); err != nil {
		l.Log.Error("write to supervisor", zap.String("t", string(m.Type())), zap.Error(err))
	}
}

func (l *Link) runner() (*Runner, wire.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.r != nil:
		return l.r, wire.OutcomeRan
	case l.ensuring:
		return nil, wire.OutcomeNotReady
	default:
		return nil, wire.OutcomeNotLive
	}
}

func (l *Link) handle(ctx context.Context, reqID string, msg wire.Message) {
	switch m := msg.(type) {
	case *wire.Hello:
		l.hello(m)
	case *wire.LiveEnsure:
		l.ensure(ctx, reqID, m)
	case *wire.Prewarm:
		l.prewarm(ctx, reqID, m)
	case *wire.Command:
		l.command(ctx, reqID, m)
	case *wire.TermOpen, *wire.TermInput, *wire.TermResize, *wire.TermClose, *wire.TermAck:
		if l.Terminals == nil {
			l.noTerminals(reqID, m)
			return
		}
		l.Terminals.Handle(ctx, reqID, m, l.send)
	default:
		l.Log.Warn("unexpected message from the supervisor", zap.String("t", string(msg.Type())))
	}
}

// noTerminals refuses a term.* message on a runner without terminals.
func (l *Link) noTerminals(reqID string, m wire.Message) {
	err := wire.Errorf(wire.CodeUnavailable, "this runner has no terminal support")
	switch m := m.(type) {
	case *wire.TermOpen:
		l.send(reqID, &wire.TermOpened{TermID: m.TermID, ClientID: m.ClientID, Error: err})
	case *wire.TermInput:
		l.send("", &wire.TermError{TermID: m.TermID, ClientID: m.ClientID, Error: err})
	case *wire.TermResize:
		l.send("", &wire.TermError{TermID: m.TermID, ClientID: m.ClientID, Error: err})
	}
}

// command runs a control command in the session. Stop can take seconds, so
// commands run off the read loop in their own goroutine, except sends and
// steers, whose order must be the order they arrived in.
func (l *Link) command(ctx context.Context, reqID string, m *wire.Command) {
	req, requestID, err := command.DecodeWithID(m.Command)
	if err != nil {
		l.send(reqID, &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: wire.ErrReply(err)})
		return
	}
	ctx = command.WithRequestID(ctx, requestID)
	r, outcome := l.runner()
	if r == nil {
		l.send(reqID, &wire.CommandReply{Outcome: outcome})
		return
	}
	run := func() {
		l.send(reqID, &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: r.Do(ctx, req)})
	}
	switch req.(type) {
	case command.Send:
		// Quick, and on the path of every turn: the state reports the
		// send causes (a message queued, a turn begun) wait for its
		// reply and go in the same write, reports first, so that the
		// supervisor reads them with the reply, in one read. (A steer
		// may wait on the engine; its reports go as they come.)
		enc := l.hold()
		l.release(enc, reqID, &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: r.Do(ctx, req)})
		return
	case command.Steer:
		run()
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		run()
	}()
}

func (l *Link) ensure(ctx context.Context, reqID string, m *wire.LiveEnsure) {
	l.mu.Lock()
	if l.r != nil {
		r := l.r
		l.mu.Unlock()
		l.send(reqID, &wire.LiveReady{Session: r.Spec().ID})
		return
	}
	if l.ensuring {
		l.mu.Unlock()
		l.send(reqID, &wire.LiveReady{Error: wire.Errorf(wire.CodeConflict, "session is already starting")})
		return
	}
	l.ensuring = true
	l.mu.Unlock()

	opts := l.Options
	opts.Spec = m.Spec
	if err := ensureDir(&opts, m.Dir); err != nil {
		l.mu.Lock()
		l.ensuring = false
		l.mu.Unlock()
		l.send(reqID, &wire.LiveReady{Error: wire.ToError(err)})
		return
	}
	opts.Mirror = l.mirrorBatch
	opts.Report = l.report
	// The supervisor learns of a rotation from the rotated event, which
	// ends the old session's log; the runner's side of the link only
	// follows the session to its new folder.
	opts.Rotate = func(from, to string) {
		if r, _ := l.runner(); r != nil && l.OnLive != nil {
			l.OnLive(r)
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		opts.Warm = l.takeWarm()
		r, err := l.Build(opts.Spec, m.Credentials, opts)
		if err != nil && opts.Warm != nil {
			opts.Warm.Close()
		}
		if err == nil {
			if err = r.Start(ctx); err != nil {
				r.Close()
			}
		}
		l.mu.Lock()
		l.ensuring = false
		if err == nil {
			l.r = r
			// A spare keeps the folder it took for a later live.ensure.
			l.Options.Dir = opts.Dir
		}
		l.mu.Unlock()
		if err != nil {
			l.send(reqID, &wire.LiveReady{Error: wire.ToError(err)})
			return
		}
		if l.OnLive != nil {
			l.OnLive(r)
		}
		l.send(reqID, &wire.LiveReady{Session: r.Spec().ID})
	}()
}

// ensureDir settles the session folder of a live.ensure: the one the
// runner was started on, or for a spare the one the message names.
func ensureDir(opts *Options, dir string) error {
	switch {
	case dir == "" && opts.Dir == "":
		return wire.Errorf(wire.CodeBadRequest, "live.ensure needs dir: this runner was started without a session folder")
	case dir == "":
		return nil
	case !filepath.IsAbs(dir):
		return wire.Errorf(wire.CodeBadRequest, "live.ensure dir %q must be an absolute path", dir)
	case opts.Dir == "":
		opts.Dir = filepath.Clean(dir)
		return nil
	case filepath.Clean(dir) != filepath.Clean(opts.Dir):
		return wire.Errorf(wire.CodeConflict, "this runner holds session folder %s, not %s", opts.Dir, dir)
	}
	return nil
}

// mirrorBatch forwards a batch of event lines as mirror messages in one
// write; lines a re-attached supervisor already has are left out. It runs
// on the event log's writer goroutine.
func (l *Link) mirrorBatch(b eventlog.Batch) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	l.mirrored = b.FirstSeq + int64(len(b.Lines)) - 1
	if l.enc == nil {
		return
	}
	buf := l.mirror[:0]
	for i, line := range b.Lines {
		if seq := b.FirstSeq + int64(i); seq >= l.skipBelow {
			buf = wire.AppendMirror(buf, seq, line)
		}
	}
	if l.mirrored >= l.skipBelow {
		l.skipBelow = 0 // caught up: a rotation's new log starts low again
	}
	l.mirror = buf
	if len(buf) == 0 {
		return
	}
	if err := l.enc.WriteRaw(buf); err != nil {
		l.Log.Error("mirror events to supervisor", zap.Error(err))
	}
}

// report sends a state report, and keeps it for a supervisor that
// re-attaches later.
func (l *Link) report(st wire.StateReport) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	l.lastState = &st
	if l.enc == nil {
		if !st.Busy() {
			select {
			case l.quietCh() <- struct{}{}:
			default:
			}
		}
		return
	}
	if err := l.enc.EncodeOrHold(&st); err != nil {
		l.Log.Error("write to supervisor", zap.String("t", string(st.Type())), zap.Error(err))
	}
}

// hold keeps the state reports back until release writes them with a
// reply, and returns the encoder it holds (nil while no supervisor is
// attached). The supervisor may go and another attach in between: the
// held reports then go to the gone one's dead stream, which is harmless,
// since a re-attach resends the last state (see reattach.go).
func (l *Link) hold() *wire.Encoder {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	if l.enc != nil {
		l.enc.Hold()
	}
	return l.enc
}

// release ends hold's Hold by writing reply with the reports held back.
func (l *Link) release(enc *wire.Encoder, reqID string, reply *wire.CommandReply) {
	if enc == nil {
		return // the supervisor that asked went before the send began
	}
	l.outMu.Lock()
	defer l.outMu.Unlock()
	if err := enc.ReleaseID(reqID, reply); err != nil && enc == l.enc {
		l.Log.Error("write to supervisor", zap.String("t", string(wire.TCommandReply)), zap.Error(err))
	}
}

// Close closes the session's runner and terminals, once Serve is done or
// the process is going away. It is idempotent.
func (l *Link) Close() { l.closeRunner() }

func (l *Link) closeRunner() {
	if l.Terminals != nil {
		l.Terminals.Close()
	}
	l.mu.Lock()
	if l.stopWarming != nil {
		l.stopWarming()
	}
	l.mu.Unlock()
	l.closeLive()
	l.wg.Wait()
	l.closeLive() // a live.ensure may have finished meanwhile
	if w := l.takeWarm(); w != nil {
		w.Close()
	}
}

func (l *Link) closeLive() {
	l.mu.Lock()
	r := l.r
	l.mu.Unlock()
	if r != nil {
		if err := r.Close(); err != nil {
			l.Log.Error("close runner", zap.Error(err))
		}
	}
}

// prewarm starts, on a spare, the engine of the session the supervisor
// expects next (wire.Prewarm), off the read loop: the supervisor waits for
// prewarmed before it hands the spare a session, and a live.ensure that
// comes sooner waits for the prewarm to end.
func (l *Link) prewarm(ctx context.Context, reqID string, m *wire.Prewarm) {
	l.mu.Lock()
	switch {
	case l.r != nil || l.ensuring || l.Options.Dir != "":
		l.mu.Unlock()
		l.send(reqID, &wire.Prewarmed{Error: wire.Errorf(wire.CodeConflict, "prewarm: this runner holds a session")})
		return
	case l.warm != nil || l.warming != nil:
		l.mu.Unlock()
		l.send(reqID, &wire.Prewarmed{Error: wire.Errorf(wire.CodeConflict, "prewarm: this runner has an engine started ahead already")})
		return
	}
	warming := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	l.warming, l.stopWarming = warming, cancel
	l.mu.Unlock()
	start := l.Prewarm
	if start == nil {
		start = func(ctx context.Context, m *wire.Prewarm, o Options) (*WarmEngine, error) {
			return Prewarm(ctx, o, m.Spec, m.Dir, m.Credentials)
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer cancel()
		w, err := start(wctx, m, l.Options)
		if err == nil && wctx.Err() != nil {
			w.Close()
			w, err = nil, wire.Errorf(wire.CodeUnavailable, "prewarm: the runner is shutting down")
		}
		l.mu.Lock()
		l.warm, l.warming, l.stopWarming = w, nil, nil
		l.mu.Unlock()
		close(warming)
		if err != nil {
			l.Log.Info("no engine started ahead", zap.String("engine", m.Spec.Engine), zap.Error(err))
			l.send(reqID, &wire.Prewarmed{Error: wire.ToError(err)})
			return
		}
		l.Log.Debug("engine started ahead", zap.String("engine", m.Spec.Engine))
		l.send(reqID, &wire.Prewarmed{})
	}()
}

// takeWarm hands over the engine a prewarm started, once it has ended,
// or nil.
func (l *Link) takeWarm() *WarmEngine {
	l.mu.Lock()
	warming := l.warming
	l.mu.Unlock()
	if warming != nil {
		<-warming
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.warm
	l.warm = nil
	return w
}
