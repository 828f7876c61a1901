package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/wire"
)

// Link is a runner process's side of the wire protocol: it reads the
// supervisor's messages from in, writes replies, mirrored events and
// rotations to out, and builds the Runner when the supervisor makes the
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
	// Handle processes a term.open, term.input, term.resize or term.close
	// message; replies and output go through send.
	Handle(ctx context.Context, m *wire.Message, send func(*wire.Message))
	// Active reports whether any client is attached (the runner must not
	// be reaped).
	Active() bool
	Close()
}

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
		m, err := dec.Decode()
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
		if m.T == wire.TShutdown {
			l.closeRunner()
			l.send(&wire.Message{T: wire.TBye, ReqID: m.ReqID})
			return nil
		}
		l.handle(ctx, m)
	}
}

func (l *Link) send(m *wire.Message) {
	if err := l.enc.Encode(m); err != nil {
		l.Log.Error("write to supervisor", zap.String("t", string(m.T)), zap.Error(err))
	}
}

func (l *Link) runner() (*Runner, wire.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.r != nil:
		return l.r, wire.OutcomeInjected
	case l.ensuring:
		return nil, wire.OutcomeNotReady
	default:
		return nil, wire.OutcomeNotLive
	}
}

func (l *Link) handle(ctx context.Context, m *wire.Message) {
	switch m.T {
	case wire.THello:
		if m.Proto != wire.ProtocolVersion {
			l.send(&wire.Message{T: wire.TReady, Proto: wire.ProtocolVersion, Error: wire.Errorf(wire.CodeProtocol,
				"runner speaks protocol %d, supervisor %d", wire.ProtocolVersion, m.Proto)})
			return
		}
		// Terminal output goes as binary frames only to a supervisor
		// that asked for them (docs/wire.md).
		l.enc.SetTermFrames(m.TermFrames)
		l.send(&wire.Message{T: wire.TReady, Proto: wire.ProtocolVersion, Session: l.Options.Spec.ID, TermFrames: m.TermFrames})
	case wire.TLiveEnsure:
		l.ensure(ctx, m)
	case wire.TInject:
		if m.Command == nil {
			l.reply(m, wire.OutcomeFailed, wire.ErrReply(wire.Errorf(wire.CodeBadRequest, "inject without a command")))
			return
		}
		l.do(ctx, m, *m.Command, wire.TInjected)
	case wire.TApprovalResolv:
		l.do(ctx, m, wire.Command{Cmd: wire.CmdAnswer, AskID: m.AskID, Decision: m.Decision, Note: m.Note}, wire.TInjected)
	case wire.TLiveInterrupt:
		l.do(ctx, m, wire.Command{Cmd: wire.CmdStop}, wire.TInterrupted)
	case wire.TCap:
		l.capability(ctx, m)
	case wire.TTermOpen, wire.TTermInput, wire.TTermResize, wire.TTermClose, wire.TTermAck:
		if l.Terminals == nil {
			l.send(&wire.Message{T: wire.TTermError, ReqID: m.ReqID, Term: m.Term,
				Error: wire.Errorf(wire.CodeUnavailable, "this runner has no terminal support")})
			return
		}
		l.Terminals.Handle(ctx, m, l.send)
	default:
		l.Log.Warn("unknown message from the supervisor", zap.String("t", string(m.T)))
		if m.ReqID != "" {
			l.send(&wire.Message{T: wire.TInjected, ReqID: m.ReqID, Outcome: wire.OutcomeFailed,
				Reply: wire.ErrReply(wire.Errorf(wire.CodeBadRequest, "unknown message type %q", m.T))})
		}
	}
}

// do runs a command. Stop can take seconds, so commands run off the read
// loop in their own goroutine, except sends and steers, whose order must be
// the order they arrived in.
func (l *Link) do(ctx context.Context, m *wire.Message, cmd wire.Command, replyType wire.Type) {
	r, outcome := l.runner()
	if r == nil {
		l.send(&wire.Message{T: replyType, ReqID: m.ReqID, Outcome: outcome,
			Reply: wire.ErrReply(wire.Errorf(wire.CodeUnavailable, "session is not live (%s)", outcome))})
		return
	}
	run := func() {
		reply := r.Do(ctx, cmd)
		out := wire.OutcomeInjected
		if !reply.OK {
			out = wire.OutcomeFailed
		}
		l.reply(&wire.Message{T: replyType, ReqID: m.ReqID}, out, reply)
	}
	if cmd.Cmd == wire.CmdSend || cmd.Cmd == wire.CmdSteer {
		run()
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		run()
	}()
}

func (l *Link) reply(m *wire.Message, outcome wire.Outcome, reply *wire.Reply) {
	t := m.T
	if t == wire.TInject || t == "" {
		t = wire.TInjected
	}
	l.send(&wire.Message{T: t, ReqID: m.ReqID, Outcome: outcome, Reply: reply})
}

// capability maps cap messages onto commands.
func (l *Link) capability(ctx context.Context, m *wire.Message) {
	r, outcome := l.runner()
	if r == nil {
		l.send(&wire.Message{T: wire.TCapResult, ReqID: m.ReqID, Error: wire.Errorf(wire.CodeUnavailable, "session is not live (%s)", outcome)})
		return
	}
	var cmd wire.Command
	if len(m.Args) > 0 {
		if err := json.Unmarshal(m.Args, &cmd); err != nil {
			l.send(&wire.Message{T: wire.TCapResult, ReqID: m.ReqID, Error: wire.Errorf(wire.CodeBadRequest, "cap %s: bad args: %v", m.Cap, err)})
			return
		}
	}
	cmd.Cmd = wire.Cmd(m.Cap)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		reply := r.Do(ctx, cmd)
		l.send(&wire.Message{T: wire.TCapResult, ReqID: m.ReqID, Result: reply.Result, Error: reply.Error})
	}()
}

func (l *Link) ensure(ctx context.Context, m *wire.Message) {
	l.mu.Lock()
	if l.r != nil {
		r := l.r
		l.mu.Unlock()
		l.send(&wire.Message{T: wire.TLiveReady, ReqID: m.ReqID, Session: r.Spec().ID})
		return
	}
	if l.ensuring {
		l.mu.Unlock()
		l.send(&wire.Message{T: wire.TLiveReady, ReqID: m.ReqID, Error: wire.Errorf(wire.CodeConflict, "session is already starting")})
		return
	}
	l.ensuring = true
	l.mu.Unlock()

	opts := l.Options
	if m.Spec != nil {
		opts.Spec = *m.Spec
	}
	if err := ensureDir(&opts, m.Dir); err != nil {
		l.mu.Lock()
		l.ensuring = false
		l.mu.Unlock()
		l.send(&wire.Message{T: wire.TLiveReady, ReqID: m.ReqID, Error: wire.ToError(err)})
		return
	}
	opts.Mirror = l.mirrorBatch
	opts.Rotate = func(from, to string) {
		l.send(&wire.Message{T: wire.TRotate, Session: from, NewSession: to})
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
			l.send(&wire.Message{T: wire.TLiveReady, ReqID: m.ReqID, Error: wire.ToError(err)})
			return
		}
		if l.OnLive != nil {
			l.OnLive(r)
		}
		l.send(&wire.Message{T: wire.TLiveReady, ReqID: m.ReqID, Session: r.Spec().ID})
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
