package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// Command runs a control command on session id, starting or resuming its
// runner first, except for the commands a session without a runner answers
// from its folder (answerNotLive). A refused command is a Reply with an
// error; the error result is for a command that never got an answer (not
// found, runner crashed, timeout).
func (m *Manager) Command(ctx context.Context, id string, cmd wire.Command) (*wire.Reply, error) {
	if cmd.Cmd == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "cmd is required (send, steer, stop, answer, status, ...)")
	}
	if r, handled, err := m.answerNotLive(id, cmd); handled {
		return r, err
	}
	ctx, cancel := m.withCallTimeout(ctx)
	defer cancel()
	// A status query is not use: a shell polling it must not keep an idle
	// runner alive.
	touch := cmd.Cmd != wire.CmdStatus
	backoff := 5 * time.Millisecond
	reensured := false
	for {
		e, err := m.acquire(ctx, id)
		if err != nil {
			return nil, err
		}
		r, err := e.child.call(ctx, &wire.Message{T: wire.TInject, Command: &cmd})
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
			return nil, err
		}
		switch r.Outcome {
		case wire.OutcomeInjected, wire.OutcomeFailed:
			if r.Reply == nil {
				return nil, wire.Errorf(wire.CodeProtocol, "runner answered %s without a reply", cmd.Cmd)
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
				return nil, ctxError(ctx, wire.TInject)
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		default:
			return nil, wire.Errorf(wire.CodeProtocol, "runner answered inject with outcome %q", r.Outcome)
		}
	}
}

// status asks a live runner for its status.
func (m *Manager) status(ctx context.Context, c *child) (*command.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := c.call(ctx, &wire.Message{T: wire.TInject, Command: &wire.Command{Cmd: wire.CmdStatus}})
	if err != nil {
		return nil, err
	}
	if r.Reply == nil {
		return nil, wire.Errorf(wire.CodeProtocol, "runner answered status with outcome %q and no reply", r.Outcome)
	}
	if err := r.Reply.Err(); err != nil {
		return nil, err
	}
	var st command.Status
	if err := json.Unmarshal(r.Reply.Result, &st); err != nil {
		return nil, wire.Errorf(wire.CodeProtocol, "runner's status: %v", err)
	}
	return &st, nil
}

// request sends one request to session id's runner (starting it) and
// returns the reply message.
func (m *Manager) request(ctx context.Context, id string, msg *wire.Message) (*wire.Message, error) {
	ctx, cancel := m.withCallTimeout(ctx)
	defer cancel()
	e, err := m.acquire(ctx, id)
	if err != nil {
		return nil, err
	}
	defer m.release(e, true)
	return e.child.call(ctx, msg)
}

// Interrupt stops session id's running turn.
func (m *Manager) Interrupt(ctx context.Context, id string) (*wire.Reply, error) {
	r, err := m.request(ctx, id, &wire.Message{T: wire.TLiveInterrupt})
	if err != nil {
		return nil, err
	}
	if r.Reply == nil {
		return nil, wire.Errorf(wire.CodeProtocol, "runner answered live.interrupt with %q and no reply", r.T)
	}
	return r.Reply, nil
}

// ResolveApproval answers an open ask of session id.
func (m *Manager) ResolveApproval(ctx context.Context, id, askID, decision, note string) (*wire.Reply, error) {
	if decision != wire.DecisionAllow && decision != wire.DecisionDeny {
		return nil, wire.Errorf(wire.CodeBadRequest, "decision must be allow or deny, not %q", decision)
	}
	r, err := m.request(ctx, id, &wire.Message{T: wire.TApprovalResolv, AskID: askID, Decision: decision, Note: note})
	if err != nil {
		return nil, err
	}
	if r.Reply == nil {
		return nil, wire.Errorf(wire.CodeProtocol, "runner answered approval.resolve with %q and no reply", r.T)
	}
	return r.Reply, nil
}

// Cap runs a capability (getGoal, setGoal, clearGoal, forkSession) on
// session id and returns its result.
func (m *Manager) Cap(ctx context.Context, id, capName string, args json.RawMessage) (json.RawMessage, error) {
	r, err := m.request(ctx, id, &wire.Message{T: wire.TCap, Cap: capName, Args: args})
	if err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, r.Error
	}
	if r.T != wire.TCapResult {
		return nil, wire.Errorf(wire.CodeProtocol, "runner answered cap with %q, want capResult", r.T)
	}
	return r.Result, nil
}

// OpenTerm attaches a client to a terminal of session id. sink receives the
// terminal's term.data, term.exit and term.error messages, on the runner's
// reader goroutine, until CloseTerm or the terminal's exit; it must not
// block. When the runner dies, sink gets a last term.error carrying the
// death error (runner_crashed, or unavailable for a shutdown). A session
// with an attached terminal is never reaped.
func (m *Manager) OpenTerm(ctx context.Context, id string, t wire.Term, sink func(*wire.Message)) (*wire.Term, error) {
	t.Export = false
	got, _, err := m.openTerm(ctx, id, t, sink)
	return got, err
}

// ExportTerm is OpenTerm asking the runner to hand the terminal over
// (wire.Term.Export): when it does, the returned master is the caller's to
// read, type into, resize and close, sink gets only the terminal's end
// (term.exit, term.error), and UnexportTerm gives the output back. A nil
// master means the runner attached the client as OpenTerm does, as it does
// for a terminal with other clients; so does a runner that cannot hand
// terminals over.
func (m *Manager) ExportTerm(ctx context.Context, id string, t wire.Term, sink func(*wire.Message)) (*wire.Term, *os.File, error) {
	t.Export = true
	return m.openTerm(ctx, id, t, sink)
}

func (m *Manager) openTerm(ctx context.Context, id string, t wire.Term, sink func(*wire.Message)) (*wire.Term, *os.File, error) {
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
	r, err := c.call(ctx, &wire.Message{T: wire.TTermOpen, Term: &t})
	if err != nil && ctx.Err() != nil {
		// The runner may still open the terminal for a caller that has
		// given up: have it let go, or it would hold the client (or, for
		// an export, wait for a reader) for ever.
		c.send(&wire.Message{T: wire.TTermClose, Term: &wire.Term{TermID: t.TermID, ClientID: t.ClientID}})
	}
	if err == nil && r.T != wire.TTermOpened {
		if r.Error != nil {
			err = r.Error
		} else {
			err = wire.Errorf(wire.CodeProtocol, "runner answered term.open with %q", r.T)
		}
	}
	if err == nil && r.Term == nil {
		err = wire.Errorf(wire.CodeProtocol, "runner answered term.open without the terminal")
	}
	if err != nil {
		c.mu.Lock()
		delete(c.terms, key)
		c.mu.Unlock()
		return nil, nil, fmt.Errorf("open terminal %s: %w", t.TermID, err)
	}
	if !t.Export || !r.Term.Export {
		return r.Term, nil, nil
	}
	master, err := receiveMaster(c.masters, t.TermID)
	if err != nil {
		// The runner waits for its output to be taken back.
		m.UnexportTerm(id, t.TermID, t.ClientID, r.Term.Data)
		return nil, nil, fmt.Errorf("open terminal %s: %w", t.TermID, err)
	}
	return r.Term, master, nil
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

// TermInput forwards keystrokes to an open terminal (term.input).
func (m *Manager) TermInput(id string, t wire.Term) error {
	return m.sendTerm(id, wire.TTermInput, t)
}

// TermResize gives an open terminal a new size (term.resize).
func (m *Manager) TermResize(id string, t wire.Term) error {
	return m.sendTerm(id, wire.TTermResize, t)
}

func (m *Manager) sendTerm(id string, typ wire.Type, t wire.Term) error {
	c, err := m.liveChild(id)
	if err != nil {
		return err
	}
	return c.send(&wire.Message{T: typ, Term: &t})
}

// CloseTerm detaches a client from a terminal.
func (m *Manager) CloseTerm(id, termID, clientID string) error {
	return m.closeTerm(id, wire.Term{TermID: termID, ClientID: clientID})
}

// UnexportTerm ends an export (ExportTerm) as CloseTerm ends an attach:
// the runner reads the terminal's output again, with scrollback as what it
// keeps of it. The caller must have stopped reading the master first.
func (m *Manager) UnexportTerm(id, termID, clientID string, scrollback []byte) error {
	return m.closeTerm(id, wire.Term{TermID: termID, ClientID: clientID, Data: scrollback})
}

// closeTerm sends term.close.
func (m *Manager) closeTerm(id string, t wire.Term) error {
	c, err := m.liveChild(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.terms != nil {
		c.dropTermLocked(t.TermID, t.ClientID)
	}
	c.mu.Unlock()
	return c.send(&wire.Message{T: wire.TTermClose, Term: &wire.Term{TermID: t.TermID, ClientID: t.ClientID, Data: t.Data}})
}
