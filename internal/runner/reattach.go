package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/wire"
)

// A runner outlives its supervisor (Link.Grace): when the link's input
// ends while the session is live, the link detaches (writes nothing, keeps
// every event in the log and the last state report) and waits for another
// supervisor, which reaches it on the session folder's runner.sock
// (runnercmd) and is handed over by Attach. The new supervisor's hello
// names the seq it needs next (MirrorFrom): the link answers ready,
// mirrors the log's events from that seq up to the last one written, sends
// the last state report, and only then lets live output through, all
// under outMu, so no event is lost or sent twice across the switch.

// setEncoder makes enc the attached supervisor's.
func (l *Link) setEncoder(enc *wire.Encoder) {
	l.outMu.Lock()
	l.enc = enc
	l.outMu.Unlock()
}

// Attachment is a re-attaching supervisor's connection, already checked to
// come from the session folder's owner.
type Attachment struct {
	Conn io.ReadWriteCloser
	// Prepare, when set, runs once the link has taken Conn and before it
	// reads from it (to take the supervisor's log pipe and terminal
	// channel).
	Prepare func()
}

// attachCh is the channel on which Attach hands Serve a connection.
func (l *Link) attachCh() chan Attachment {
	l.attachOnce.Do(func() { l.attach = make(chan Attachment) })
	return l.attach
}

// Attach hands the link a re-attaching supervisor's connection. It waits
// until the link has no supervisor (the previous one's link ended) or ctx
// ends, and reports whether the link took it; if not, a.Conn is still the
// caller's.
func (l *Link) Attach(ctx context.Context, a Attachment) bool {
	select {
	case l.attachCh() <- a:
		return true
	case <-ctx.Done():
		return false
	}
}

// outlives reports whether the session is to outlive its supervisor.
func (l *Link) outlives() bool {
	r, _ := l.runner()
	return l.Grace > 0 && r != nil
}

// detach stops writing to the supervisor that went away and lets go of
// its terminal clients.
func (l *Link) detach() {
	l.setEncoder(nil)
	if l.Terminals != nil {
		l.Terminals.Detach()
	}
	l.Log.Warn("supervisor went away; the session goes on and waits for one to re-attach", zap.Duration("grace", l.Grace))
}

// await waits up to Grace for a supervisor to re-attach, while the session
// has work under way (wire.StateReport.Busy: a turn, queued messages, open
// asks, pending edits). It returns nil when none came (the caller closes
// the runner), ctx ended, or the session has nothing under way: then
// nothing is lost by stopping, and the next supervisor starts a runner
// again when the session is next used.
func (l *Link) await(ctx context.Context) io.ReadWriteCloser {
	select {
	case <-l.quietCh(): // from an earlier wait
	default:
	}
	if !l.busy() {
		l.Log.Info("no supervisor and nothing under way; shutting down")
		return nil
	}
	t := time.NewTimer(l.Grace)
	defer t.Stop()
	select {
	case <-l.quietCh():
		l.Log.Info("no supervisor re-attached and the work under way is done; shutting down")
		return nil
	case a := <-l.attachCh():
		if a.Prepare != nil {
			a.Prepare()
		}
		l.Log.Info("a supervisor re-attached")
		return a.Conn
	case <-t.C:
		l.Log.Warn("no supervisor re-attached in time; shutting down", zap.Duration("grace", l.Grace))
		return nil
	case <-ctx.Done():
		return nil
	}
}

// busy reports whether the session's last state report shows work under
// way.
func (l *Link) busy() bool {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	return l.lastState != nil && l.lastState.Busy()
}

// quietCh is signalled when a report comes that shows nothing under way
// while no supervisor is attached.
func (l *Link) quietCh() chan struct{} {
	l.quietOnce.Do(func() { l.quiet = make(chan struct{}, 1) })
	return l.quiet
}

// Orphaned reports whether Serve ended with no supervisor attached: the
// runner's own process group then has no supervisor to sweep it.
func (l *Link) Orphaned() bool { return l.orphaned.Load() }

// pending makes conn the output of the next hello.
func (l *Link) pending(conn io.Writer) {
	l.outMu.Lock()
	l.next = wire.NewEncoder(conn)
	l.outMu.Unlock()
}

// hello answers a supervisor's hello. On a re-attached link it switches
// the output over to it, mirroring first what it lacks.
func (l *Link) hello(m *wire.Hello) {
	session, dir := l.Options.Spec.ID, ""
	r, _ := l.runner()
	if r != nil {
		// Asked before outMu is taken: the runner's locks come first.
		session, dir = r.Spec().ID, r.Dir()
	}
	l.outMu.Lock()
	defer l.outMu.Unlock()
	enc := l.enc
	if l.next != nil {
		enc, l.next = l.next, nil
	}
	if enc == nil {
		return
	}
	if m.Proto != wire.ProtocolVersion {
		err := enc.Encode(&wire.Ready{Proto: wire.ProtocolVersion, Error: wire.Errorf(wire.CodeProtocol,
			"runner speaks protocol %d, supervisor %d", wire.ProtocolVersion, m.Proto)})
		if err != nil {
			l.Log.Error("write to supervisor", zap.String("t", string(wire.TReady)), zap.Error(err))
		}
		return
	}
	// Terminal output goes as binary frames only to a supervisor that
	// asked for them (docs/wire.md).
	enc.SetTermFrames(m.TermFrames)
	if err := enc.Encode(&wire.Ready{Proto: wire.ProtocolVersion, Session: session, TermFrames: m.TermFrames}); err != nil {
		l.Log.Error("write to supervisor", zap.String("t", string(wire.TReady)), zap.Error(err))
		return
	}
	if r != nil && m.MirrorFrom > 0 {
		if err := l.replayLocked(enc, dir, m.MirrorFrom); err != nil {
			l.Log.Error("mirror the events a re-attached supervisor lacks", zap.Int64("from", m.MirrorFrom), zap.Error(err))
		}
		l.skipBelow = max(m.MirrorFrom, l.mirrored+1)
	}
	l.enc = enc
	if l.lastState != nil && r != nil {
		if err := enc.Encode(l.lastState); err != nil {
			l.Log.Error("write to supervisor", zap.String("t", string(wire.TState)), zap.Error(err))
		}
	}
}

// replayLocked mirrors the events of dir's log from seq from up to the
// last one handed to mirrorBatch; the log has every one of them, as an
// event is written before it is mirrored. Later ones come by mirrorBatch.
func (l *Link) replayLocked(enc *wire.Encoder, dir string, from int64) error {
	if from > l.mirrored {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		return err
	}
	defer f.Close()
	var buf []byte
	next := from
	flush := func() error {
		err := enc.WriteRaw(buf)
		buf = buf[:0]
		return err
	}
	err = eventlog.Scan(f, from, func(seq int64, line []byte) error {
		if seq > l.mirrored {
			return eventlog.ErrStop
		}
		if seq != next {
			return fmt.Errorf("the log has seq %d where %d was expected", seq, next)
		}
		next++
		buf = wire.AppendMirror(buf, seq, line)
		if len(buf) >= 256<<10 {
			return flush()
		}
		return nil
	})
	if err == nil && len(buf) > 0 {
		err = flush()
	}
	if err == nil && next <= l.mirrored {
		err = errors.New("the log ends before the last mirrored event")
	}
	return err
}
