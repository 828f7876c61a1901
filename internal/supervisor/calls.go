package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/supervisor/termhost"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// Command runs a control command on session id, starting or resuming its
// runner first, except for the commands a session without a runner answers
// from its folder (answerNotLive). A refused command is a Reply with an
// error; the error result is for a command that never got an answer (not
// found, runner crashed, timeout). Any other command the supervisor passes
// through without knowing it, with the requestId ctx carries
// (command.WithRequestID).
//
// A send whose runner dies before it answers is sent again to the
// session's next runner (up to sendRetries times), under the same
// requestId (one is made when the caller named none): the runner records
// a send's requestId with the message, so a send that got in before the
// crash is not queued twice, and the caller gets its reply rather than
// runner_crashed.
func (m *Manager) Command(ctx context.Context, id string, req command.Request) (*wire.Reply, error) {
	_, send := req.(command.Send)
	requestID := command.RequestIDFrom(ctx)
	if send && requestID == "" {
		requestID = newRequestID()
	}
	raw, err := command.MarshalWithID(req, requestID)
	if err != nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "%v", err)
	}
	if r, handled, err := m.answerNotLive(id, req); handled {
		return r, err
	}
	ctx, cancel := m.withCallTimeout(ctx)
	defer cancel()
	// A status query is not use: a shell polling it must not keep an idle
	// runner alive.
	_, query := req.(command.GetStatus)
	touch := !query
	backoff := 5 * time.Millisecond
	reensured := false
	retries := 0
	retry := func(err error) bool {
		if !send || retries >= sendRetries || !errors.Is(err, wire.ErrRunnerCrashed) || ctx.Err() != nil {
			return false
		}
		retries++
		m.log.Info("runner died under a send; sending it again to the next runner",
			zap.String("session", id), zap.Int("retry", retries), zap.Error(err))
		return true
	}
	for {
		e, err := m.acquire(ctx, id)
		if err != nil {
			if retry(err) {
				continue
			}
			return nil, err
		}
		r, err := call(ctx, e.child, &wire.Command{Command: raw})
		if err == nil && r.Outcome == wire.OutcomeNotLive && !reensured {
			// The runner lost its live session (an engine that ended, say):
			// make it live again once, then retry.
			reensured = true
			var spec wire.Spec
			if spec, err = readSpec(m.dir(id), id); err == nil {
				// No folder: the runner stays on the one it holds, which a
				// fork may have moved from this id's.
				err = m.ensureLive(ctx, e.child, spec, "")
			}
			if err == nil {
				m.release(e, touch)
				continue
			}
		}
		m.release(e, touch)
		if err != nil {
			if retry(err) {
				continue
			}
			return nil, err
		}
		switch r.Outcome {
		case wire.OutcomeRan:
			if r.Reply == nil {
				return nil, wire.Errorf(wire.CodeProtocol, "runner answered %s without a reply", req.Cmd())
			}
			return r.Reply, nil
		case wire.OutcomeNotLive:
			return nil, wire.Errorf(wire.CodeUnavailable, "session %s is not live even after live.ensure", id)
		case wire.OutcomeNotReady:
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctxError(ctx, wire.TCommand)
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		default:
			return nil, wire.Errorf(wire.CodeProtocol, "runner answered %s with outcome %q", req.Cmd(), r.Outcome)
		}
	}
}

// sendRetries bounds how many runners in a row a send is tried on after
// the one it reached died under it.
const sendRetries = 3

// newRequestID names a send the caller named no requestId for, so that
// sending it again to the next runner is safe.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return "sup-" + hex.EncodeToString(b[:])
}

// statusCommand is the status command as the link carries it.
var statusCommand = json.RawMessage(`{"cmd":"status"}`)

// status asks a live runner for its status.
func (m *Manager) status(ctx context.Context, c *child) (*command.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := call(ctx, c, &wire.Command{Command: statusCommand})
	if err != nil {
		return nil, err
	}
	if r.Reply == nil {
		return nil, wire.Errorf(wire.CodeProtocol, "runner answered status with outcome %q and no reply", r.Outcome)
	}
	st, err := command.Result(command.GetStatus{}, r.Reply)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// OpenTerm attaches a client to a terminal of session id. sink receives the
// terminal's term.data, term.exit and term.error messages, on the runner's
// reader goroutine, until CloseTerm or the terminal's exit; it must not
// block. When the runner dies, sink gets a last term.error carrying the
// death error (runner_crashed, or unavailable for a shutdown). A session
// with an attached terminal is never reaped.
func (m *Manager) OpenTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, error) {
	t.Export = false
	got, _, err := m.openTerm(ctx, id, t, sink)
	return got, err
}

// ExportTerm is OpenTerm asking the runner to hand the terminal over
// (wire.TermOpen.Export): when it does, the returned master is the
// caller's to read, type into, resize and close, sink gets only the
// terminal's end (term.exit, term.error), and UnexportTerm gives the
// output back. A nil master means the runner attached the client as
// OpenTerm does, as it does for a terminal with other clients; so does a
// runner that cannot hand terminals over.
func (m *Manager) ExportTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, *os.File, error) {
	t.Export = true
	return m.openTerm(ctx, id, t, sink)
}

func (m *Manager) openTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, *os.File, error) {
	if t.TermID == "" {
		return nil, nil, wire.Errorf(wire.CodeBadRequest, "termId is required")
	}
	ctx, cancel := m.withCallTimeout(ctx)
	defer cancel()
	e, err := m.acquire(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	defer m.release(e, true)
	c := e.child
	key := termKey{t.TermID, t.ClientID}
	c.mu.Lock()
	if c.terms == nil {
		c.mu.Unlock()
		return nil, nil, c.err()
	}
	// Registered before the request, so output right after the opening
	// is not lost.
	c.terms[key] = sink
	c.mu.Unlock()
	if t.Export = t.Export && c.masters != nil; t.Export {
		// One export at a time: the master on the channel is this one's.
		c.exportMu.Lock()
		defer c.exportMu.Unlock()
	}
	r, err := call(ctx, c, &t)
	if err != nil && ctx.Err() != nil {
		// The runner may still open the terminal for a caller that has
		// given up: have it let go, or it would hold the client (or, for
		// an export, wait for a reader) for ever.
		c.send(&wire.TermClose{TermID: t.TermID, ClientID: t.ClientID})
	}
	if err == nil && r.Error != nil {
		err = r.Error
	}
	if err != nil {
		c.mu.Lock()
		delete(c.terms, key)
		c.mu.Unlock()
		return nil, nil, fmt.Errorf("open terminal %s: %w", t.TermID, err)
	}
	if !t.Export || !r.Export {
		return r, nil, nil
	}
	master, err := termhost.ReceiveMaster(c.masters, t.TermID)
	if err != nil {
		// The runner waits for its output to be taken back.
		m.UnexportTerm(id, t.TermID, t.ClientID, r.Data)
		return nil, nil, fmt.Errorf("open terminal %s: %w", t.TermID, err)
	}
	return r, master, nil
}

// liveChild returns session id's runner without starting one.
func (m *Manager) liveChild(id string) (*child, error) {
	e := m.holdLive(id)
	if e == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "session %s has no live runner", id)
	}
	m.release(e, true)
	return e.child, nil
}

// TermInput forwards keystrokes to an open terminal.
func (m *Manager) TermInput(id string, in wire.TermInput) error { return m.sendTerm(id, &in) }

// TermResize gives an open terminal a new size.
func (m *Manager) TermResize(id string, r wire.TermResize) error { return m.sendTerm(id, &r) }

// TermAck tells the runner how many bytes of a terminal's output its client
// has taken in all (term.ack), for a client opened with a flow-control
// window: the runner holds output back beyond the window.
func (m *Manager) TermAck(id string, a wire.TermAck) error { return m.sendTerm(id, &a) }

func (m *Manager) sendTerm(id string, msg wire.Message) error {
	c, err := m.liveChild(id)
	if err != nil {
		return err
	}
	return c.send(msg)
}

// CloseTerm detaches a client from a terminal.
func (m *Manager) CloseTerm(id, termID, clientID string) error {
	return m.closeTerm(id, wire.TermClose{TermID: termID, ClientID: clientID})
}

// UnexportTerm ends an export (ExportTerm) as CloseTerm ends an attach:
// the runner reads the terminal's output again, with scrollback as what it
// keeps of it. The caller must have stopped reading the master first.
func (m *Manager) UnexportTerm(id, termID, clientID string, scrollback []byte) error {
	return m.closeTerm(id, wire.TermClose{TermID: termID, ClientID: clientID, Data: scrollback})
}

// closeTerm sends term.close.
func (m *Manager) closeTerm(id string, t wire.TermClose) error {
	c, err := m.liveChild(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.terms != nil {
		c.dropTermLocked(t.TermID, t.ClientID)
	}
	c.mu.Unlock()
	return c.send(&t)
}
