package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// read handles the runner's stdout until it closes. Bad lines are logged and
// skipped; mirror and state lines take the fast decoders that pkg/wire keeps
// beside their encoders, and binary terminal frames carry output without
// any decoding. (A term.data line, which a runner writes only for output a
// frame cannot carry, goes through the general decoder.)
func (c *child) read(r io.Reader, maxLine int) {
	lr := wire.NewLineReader(r, maxLine)
	lr.AcceptTermFrames()
	if c.buffers != nil {
		lr.AllocPayloads(c.buffers.get)
	}
	// The session's hub, looked up at the first mirror: a spare has no
	// session until it is handed one, before its live.ensure.
	var cur *hub
	// Mirrored lines outlive the reader's buffer (in the hubs' and the
	// feed's rings): they are copied out into blocks shared by many.
	var slab lineSlab
	// Mirrored events read in are published together once no further
	// whole line is at hand, before anything else the runner wrote after
	// them is acted on (a reply, a state report), and before a rotation.
	var pending []Event
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if cur == nil {
			cur = c.hooks.hub(c.currentSession())
		}
		c.publish(cur, pending)
		clear(pending)
		pending = pending[:0]
	}
	mirror := func(seq int64, ev Event) {
		if ev.Seq != seq {
			c.log.Warn("mirror seq differs from its event's seq; using the event's", zap.Int64("mirror", seq), zap.Int64("event", ev.Seq))
		}
		if string(ev.Type) != string(event.Rotated) {
			pending = append(pending, ev)
			return
		}
		flush()
		if cur == nil {
			cur = c.hooks.hub(c.currentSession())
		}
		c.publish(cur, []Event{ev})
		if to := c.rotation(ev); to != "" {
			cur = c.rotate(to)
		}
	}
	for {
		if len(pending) >= maxMirrorBatch || len(pending) > 0 && !lr.LineBuffered() {
			flush()
		}
		line, frame, err := lr.NextRecord()
		if err == nil && frame == nil {
			if m, ok := wire.ParseMirrorEvent(line); ok {
				if m.Err != nil {
					c.log.Warn("skipping unreadable mirrored event", zap.Int64("seq", m.Seq), zap.Error(m.Err))
					continue
				}
				mirror(m.Seq, slab.keep(Event{Seq: m.EventSeq, Type: m.Type, Line: m.Event}))
				continue
			}
		}
		flush()
		if err != nil {
			var le *wire.LineError
			if errors.As(err, &le) {
				c.log.Warn("skipping runner output line", zap.Error(le))
				continue
			}
			var fe *wire.FrameError
			if errors.As(err, &fe) {
				c.breakLink(fe)
				return
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Warn("reading runner output", zap.Error(err))
			}
			return
		}
		if frame != nil {
			c.deliver("", frame.Message())
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if st, ok := wire.ParseState(line); ok {
			c.report(&st)
			continue
		}
		m, reqID, err := wire.Unmarshal(line)
		if err != nil {
			c.log.Warn("skipping malformed runner message", zap.Error(err), zap.ByteString("line", clip(line, 120)))
			continue
		}
		switch m := m.(type) {
		case *wire.Mirror:
			evSeq, typ, err := wire.ScanEvent(m.Event)
			if err != nil {
				c.log.Warn("skipping unreadable mirrored event", zap.Int64("seq", m.Seq), zap.Error(err))
				continue
			}
			mirror(m.Seq, Event{Seq: evSeq, Type: typ, Line: m.Event})
			flush()
		case *wire.StateReport:
			c.report(m)
		default:
			c.deliver(reqID, m)
		}
	}
}

// breakLink gives up on a runner whose output lost its framing: nothing it
// writes can be trusted to be where it seems, so it is killed, and its
// callers and terminal clients are told why.
func (c *child) breakLink(err error) {
	c.log.Error("runner output is unreadable; killing the runner", zap.Error(err))
	c.mu.Lock()
	c.broken = err
	c.mu.Unlock()
	proc.KillGroup(c.pid)
}

// rotate moves the child to session to and returns that session's hub. The
// runner announces a rotation once, by the rotated event, which ends the
// old session's log: every event mirrored after it goes to the new session.
func (c *child) rotate(to string) *hub {
	c.mu.Lock()
	from := c.session
	c.session = to
	c.mu.Unlock()
	if from != to {
		c.hooks.rotate(c, from, to)
	}
	return c.hooks.hub(to)
}

// maxMirrorBatch bounds how many mirrored events the reader holds before
// it publishes them: a subscriber sees a flood's events in steps of at
// most this many.
const maxMirrorBatch = 256

// publish publishes mirrored events of h's session, read together. Each is
// observed before it is published: a shell that saw an event finds it
// counted. (What the session is doing, the runner reports itself: report.)
func (c *child) publish(h *hub, evs []Event) {
	session, engine := c.identity()
	for _, ev := range evs {
		c.hooks.observer.Event(session, engine, ev.Type, ev.Line)
	}
	h.publishBatch(evs)
}

// rotation returns the new session id a rotated event names, or "" when
// it names none usable.
func (c *child) rotation(ev Event) string {
	var rot struct {
		Data event.RotatedData `json:"data"`
	}
	if err := json.Unmarshal(ev.Line, &rot); err != nil || !validID(rot.Data.To) {
		c.log.Warn("rotated event without a usable new session id", zap.Int64("seq", ev.Seq), zap.Error(err))
		return ""
	}
	return rot.Data.To
}

// report records what the runner says its session is doing. The idle clock
// starts when a busy session stops being busy. A session whose event log
// fails is logged at error level (the runner logs why to its own log), and
// the change is told to the feed (hooks.storage), since no event can be.
func (c *child) report(st *wire.StateReport) {
	prev := c.state.Swap(st)
	if prev != nil && prev.Busy() && !st.Busy() {
		c.idleSince.Store(c.now().UnixNano())
	}
	wasFailed := prev != nil && prev.State == wire.StateStorageFailed
	failed := st.State == wire.StateStorageFailed
	if failed == wasFailed {
		return
	}
	if failed {
		c.log.Error("session storage failed: its event log cannot be written (is the state folder's disk full?); commands are refused with storage_unavailable until it has room")
	} else {
		c.log.Info("session storage writable again")
	}
	if c.hooks.storage != nil {
		c.hooks.storage(c, failed)
	}
}

// busy reports whether the runner's last report shows anything under way
// or waiting for a person.
func (c *child) busy() bool {
	st := c.state.Load()
	return st != nil && st.Busy()
}

// deliver hands a reply to the call waiting for it, or a terminal message
// to the terminal's client.
func (c *child) deliver(reqID string, m wire.Message) {
	if r, ok := m.(*wire.Ready); ok {
		select {
		case c.ready <- r:
		default:
			c.log.Warn("skipping repeated ready")
		}
		return
	}
	if reqID != "" {
		c.mu.Lock()
		ch, ok := c.pending[reqID]
		delete(c.pending, reqID)
		c.mu.Unlock()
		if ok {
			ch <- m
			return
		}
		// The caller gave up waiting (its context ended) before the reply.
		c.log.Debug("late reply from runner", zap.String("t", string(m.Type())), zap.String("reqId", reqID))
		return
	}
	tm, ok := m.(wire.TermMessage)
	if !ok {
		c.log.Warn("skipping unexpected runner message", zap.String("t", string(m.Type())))
		return
	}
	// Terminal output names its client, or none to reach every client of
	// the terminal.
	termID, clientID := tm.Terminal()
	var sinks []func(wire.Message)
	c.mu.Lock()
	for k, sink := range c.terms {
		if k.term == termID && (clientID == "" || k.client == clientID) {
			sinks = append(sinks, sink)
		}
	}
	// A term.error may only refuse one input, so the client stays
	// attached (and the runner unreaped) until it closes or exits.
	if _, exit := m.(*wire.TermExit); exit {
		c.dropTermLocked(termID, clientID)
	}
	c.mu.Unlock()
	data, isData := m.(*wire.TermData)
	for i, sink := range sinks {
		msg := m
		if isData && i < len(sinks)-1 {
			// Each sink may keep or recycle the output it gets, so all
			// but the last get a copy, made before the last has it.
			msg = &wire.TermData{TermID: data.TermID, ClientID: data.ClientID, Data: bytes.Clone(data.Data)}
		}
		sink(msg)
	}
	if len(sinks) == 0 {
		c.log.Debug("terminal message for no client", zap.String("t", string(m.Type())), zap.String("termId", termID))
	}
}

// dropTermLocked forgets a terminal client, or every client of the terminal
// when client is empty (its program exited).
func (c *child) dropTermLocked(term, client string) {
	for k := range c.terms {
		if k.term == term && (client == "" || k.client == client) {
			delete(c.terms, k)
		}
	}
}

// send writes a message that gets no reply.
func (c *child) send(m wire.Message) error {
	if err := c.err(); err != nil {
		return err
	}
	if err := c.enc.Encode(m); err != nil {
		return c.writeFailed(context.Background(), m.Type(), err)
	}
	return nil
}

// call sends req and returns the runner's answer, which must be the one
// message type that answers it. A runner that dies first makes it fail
// with the runner's death error.
func call[R wire.Message](ctx context.Context, c *child, req wire.Request[R]) (R, error) {
	var zero R
	m, err := c.request(ctx, req)
	if err != nil {
		return zero, err
	}
	r, ok := m.(R)
	if !ok {
		return zero, wire.Errorf(wire.CodeProtocol, "runner answered %s with %s", req.Type(), m.Type())
	}
	return r, nil
}

// request sends a request with a fresh reqId and waits for the message
// carrying it.
func (c *child) request(ctx context.Context, req wire.Message) (wire.Message, error) {
	id := strconv.FormatUint(c.nextReq.Add(1), 10)
	ch := make(chan wire.Message, 1)
	c.mu.Lock()
	if c.death != nil {
		c.mu.Unlock()
		return nil, c.death
	}
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.enc.EncodeID(id, req); err != nil {
		c.forget(id)
		return nil, c.writeFailed(ctx, req.Type(), err)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		select {
		case r := <-ch:
			return r, nil
		default:
			return nil, c.death
		}
	case <-ctx.Done():
		c.forget(id)
		return nil, ctxError(ctx, req.Type())
	}
}

func (c *child) forget(reqID string) {
	c.mu.Lock()
	delete(c.pending, reqID)
	c.mu.Unlock()
}

// writeFailed explains a failed write: a runner that is dying reports its
// death (with exit status and stderr), which follows the broken pipe
// closely.
func (c *child) writeFailed(ctx context.Context, t wire.Type, err error) error {
	t0 := time.NewTimer(2 * time.Second)
	defer t0.Stop()
	select {
	case <-c.done:
		return c.death
	case <-ctx.Done():
	case <-t0.C:
	}
	return wire.Errorf(wire.CodeUnavailable, "send %s to runner: %v", t, err)
}

func ctxError(ctx context.Context, t wire.Type) error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return wire.Errorf(wire.CodeTimeout, "runner did not answer %s in time", t)
	}
	return fmt.Errorf("waiting for the runner to answer %s: %w", t, ctx.Err())
}

// handshake checks the runner speaks this protocol version. mirrorFrom is
// a re-attaching supervisor's: the first seq of the session's log it lacks
// (wire.Hello).
func (c *child) handshake(ctx context.Context, mirrorFrom int64) error {
	if err := c.enc.Encode(&wire.Hello{Proto: wire.ProtocolVersion, TermFrames: true, MirrorFrom: mirrorFrom}); err != nil {
		return c.writeFailed(ctx, wire.THello, err)
	}
	select {
	case m := <-c.ready:
		if m.Error != nil {
			return fmt.Errorf("runner %s refused the handshake: %w", c.path, m.Error)
		}
		if m.Proto != wire.ProtocolVersion {
			return wire.Errorf(wire.CodeProtocol,
				"runner %s speaks protocol version %d but this supervisor speaks %d: install a runner from the same release",
				c.path, m.Proto, wire.ProtocolVersion)
		}
		if m.Session != "" && m.Session != c.currentSession() {
			return wire.Errorf(wire.CodeProtocol, "runner says it holds session %q, expected %q", m.Session, c.currentSession())
		}
		c.log.Debug("runner ready", zap.Bool("termFrames", m.TermFrames))
		return nil
	case <-c.done:
		return c.death
	case <-ctx.Done():
		return ctxError(ctx, wire.THello)
	}
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
