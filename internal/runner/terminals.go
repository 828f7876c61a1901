package runner

import (
	"context"
	"errors"
	"sync"

	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/pkg/wire"
)

// Terminals serves a session's term.* messages from a terminal hub: one PTY
// per terminal id, one owner and any number of read-only viewers.
type Terminals struct {
	hub    *term.Hub
	ctx    context.Context
	cancel context.CancelFunc

	mu  sync.Mutex
	cwd string
}

// NewTerminals returns a handler over hub. Attachments live until their
// client closes, the terminal exits, or Close.
func NewTerminals(hub *term.Hub) *Terminals {
	ctx, cancel := context.WithCancel(context.Background())
	return &Terminals{hub: hub, ctx: ctx, cancel: cancel}
}

// SetCwd sets where new terminals start when the request names no folder:
// the session's worktree.
func (t *Terminals) SetCwd(dir string) {
	t.mu.Lock()
	t.cwd = dir
	t.mu.Unlock()
}

// Active reports whether any client is attached.
func (t *Terminals) Active() bool { return t.hub.Active() }

// Close detaches every client and kills every terminal's processes.
func (t *Terminals) Close() {
	// The hub first, so clients are told the hub closed rather than that
	// a context was cancelled.
	t.hub.Close()
	t.cancel()
}

// Handle serves one term.* message.
func (t *Terminals) Handle(_ context.Context, m *wire.Message, send func(*wire.Message)) {
	if m.Term == nil || m.Term.TermID == "" || m.Term.ClientID == "" {
		send(&wire.Message{T: wire.TTermError, ReqID: m.ReqID, Term: m.Term,
			Error: wire.Errorf(wire.CodeBadRequest, "%s needs term.termId and term.clientId", m.T)})
		return
	}
	tm := m.Term
	fail := func(err error) {
		code := wire.CodeBadRequest
		switch {
		case errors.Is(err, term.ErrReadOnly):
			code = wire.CodeConflict
		case errors.Is(err, term.ErrHubClosed):
			code = wire.CodeUnavailable
		case errors.Is(err, term.ErrDetached):
			code = wire.CodeNotFound
		}
		send(&wire.Message{T: wire.TTermError, ReqID: m.ReqID, Term: &wire.Term{TermID: tm.TermID, ClientID: tm.ClientID},
			Error: wire.Errorf(code, "%s: %v", m.T, err)})
	}
	if m.T == wire.TTermOpen {
		t.mu.Lock()
		cwd := t.cwd
		t.mu.Unlock()
		sink := &wireSink{send: send, reqID: m.ReqID, termID: tm.TermID, clientID: tm.ClientID}
		_, _, err := t.hub.Attach(t.ctx, term.AttachRequest{
			TermID: tm.TermID, ClientID: tm.ClientID, Role: term.Role(tm.Role),
			Command: tm.Command, Cwd: cwd, Cols: tm.Cols, Rows: tm.Rows,
		}, sink)
		if err != nil {
			fail(err)
		}
		return
	}
	c, ok := t.hub.Client(tm.TermID, tm.ClientID)
	if !ok {
		fail(wire.Errorf(wire.CodeNotFound, "client %s is not attached to terminal %s", tm.ClientID, tm.TermID))
		return
	}
	var err error
	switch m.T {
	case wire.TTermInput:
		err = c.Input(tm.Data)
	case wire.TTermResize:
		err = c.Resize(tm.Cols, tm.Rows)
	case wire.TTermClose:
		c.Close()
	}
	if err != nil {
		fail(err)
	}
}

// wireSink turns one client's terminal stream into wire messages.
type wireSink struct {
	send             func(*wire.Message)
	reqID            string
	termID, clientID string
}

func (s *wireSink) Opened(g term.Grant) {
	s.send(&wire.Message{T: wire.TTermOpened, ReqID: s.reqID, Term: &wire.Term{
		TermID: s.termID, ClientID: s.clientID, Role: string(g.Role), Cols: g.Cols, Rows: g.Rows}})
}

func (s *wireSink) Data(p []byte) error {
	s.send(&wire.Message{T: wire.TTermData, Term: &wire.Term{TermID: s.termID, ClientID: s.clientID, Data: p}})
	return nil
}

func (s *wireSink) Exit(code int, signal string) {
	s.send(&wire.Message{T: wire.TTermExit, Term: &wire.Term{TermID: s.termID, ClientID: s.clientID, ExitCode: &code, Signal: signal}})
}

func (s *wireSink) Closed(err error) {
	if err == nil {
		return
	}
	code := wire.CodeUnavailable
	if errors.Is(err, term.ErrSlowClient) {
		code = wire.CodeTimeout
	}
	s.send(&wire.Message{T: wire.TTermError, Term: &wire.Term{TermID: s.termID, ClientID: s.clientID},
		Error: wire.Errorf(code, "terminal stream ended: %v", err)})
}
