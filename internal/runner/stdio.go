package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

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

	enc      *wire.Encoder
	mu       sync.Mutex
	r        *Runner
	ensuring bool
	wg       sync.WaitGroup
	mirror   []byte
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
	Close()
}

// Sender writes one message to the supervisor, with the request id it
// answers ("" for a message that answers none).
type Sender func(reqID string, m wire.Message)

// Serve runs the protocol until a shutdown message or the end of in (the
// supervisor is gone); either way the runner is closed cleanly.
func (l *Link) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	l.enc = wire.NewEncoder(out)
	if l.Log == nil {
		l.Log = zap.NewNop()
	}
	dec := wire.NewDecoder(in, 0)
	defer l.closeRunner()
	for {
		m, reqID, err := dec.Decode()
		var le *wire.LineError
		switch {
		case errors.As(err, &le):
			l.Log.Warn("skipped a bad line from the supervisor", zap.Error(le))
			continue
		case errors.Is(err, io.EOF):
			l.Log.Info("supervisor closed stdin; shutting down")
			return nil
		case err != nil:
			return fmt.Errorf("read from supervisor: %w", err)
		}
		if _, ok := m.(*wire.Shutdown); ok {
			l.closeRunner()
			l.send(reqID, &wire.Bye{})
			return nil
		}
		l.handle(ctx, reqID, m)
	}
}

// send writes one message to the supervisor.
func (l *Link) send(reqID string, m wire.Message) {
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
		if m.Proto != wire.ProtocolVersion {
			l.send("", &wire.Ready{Proto: wire.ProtocolVersion, Error: wire.Errorf(wire.CodeProtocol,
				"runner speaks protocol %d, supervisor %d", wire.ProtocolVersion, m.Proto)})
			return
		}
		// Terminal output goes as binary frames only to a supervisor
		// that asked for them (docs/wire.md).
		l.enc.SetTermFrames(m.TermFrames)
		l.send("", &wire.Ready{Proto: wire.ProtocolVersion, Session: l.Options.Spec.ID, TermFrames: m.TermFrames})
	case *wire.LiveEnsure:
		l.ensure(ctx, reqID, m)
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
	req, err := command.Decode(m.Command)
	if err != nil {
		l.send(reqID, &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: wire.ErrReply(err)})
		return
	}
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
		l.enc.Hold()
		var reply *wire.Reply
		defer func() {
			if err := l.enc.ReleaseID(reqID, &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: reply}); err != nil {
				l.Log.Error("write to supervisor", zap.String("t", string(wire.TCommandReply)), zap.Error(err))
			}
		}()
		reply = r.Do(ctx, req)
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
	opts.Report = func(st wire.StateReport) {
		if err := l.enc.EncodeOrHold(&st); err != nil {
			l.Log.Error("write to supervisor", zap.String("t", string(st.Type())), zap.Error(err))
		}
	}
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
		r, err := l.Build(opts.Spec, m.Credentials, opts)
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
// write. It runs on the event log's writer goroutine.
func (l *Link) mirrorBatch(b eventlog.Batch) {
	buf := l.mirror[:0]
	for i, line := range b.Lines {
		buf = wire.AppendMirror(buf, b.FirstSeq+int64(i), line)
	}
	l.mirror = buf
	if err := l.enc.WriteRaw(buf); err != nil {
		l.Log.Error("mirror events to supervisor", zap.Error(err))
	}
}

// Close closes the session's runner and terminals, once Serve is done or
// the process is going away. It is idempotent.
func (l *Link) Close() { l.closeRunner() }

func (l *Link) closeRunner() {
	if l.Terminals != nil {
		l.Terminals.Close()
	}
	l.closeLive()
	l.wg.Wait()
	l.closeLive() // a live.ensure may have finished meanwhile
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
