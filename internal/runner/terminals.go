package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/pkg/wire"
)

// Terminals serves a session's term.* messages from a terminal hub: one PTY
// per terminal id, one owner and any number of read-only viewers.
type Terminals struct {
	hub     *term.Hub
	ctx     context.Context
	cancel  context.CancelFunc
	masters *net.UnixConn // where exported masters go; nil: no export

	mu    sync.Mutex
	cwd   string
	sinks map[sinkKey]*wireSink // the clients under flow control
	// clients are every client attached or exported through the link,
	// for Detach (entries of clients gone since are harmless).
	clients map[sinkKey]bool
}

type sinkKey struct{ term, client string }

// NewTerminals returns a handler over hub. Attachments live until their
// client closes, the terminal exits, or Close.
func NewTerminals(hub *term.Hub) *Terminals {
	ctx, cancel := context.WithCancel(context.Background())
	return &Terminals{hub: hub, ctx: ctx, cancel: cancel, sinks: map[sinkKey]*wireSink{}, clients: map[sinkKey]bool{}}
}

// SetMasterChannel lets the supervisor take terminals over (term.open with
// export): each exported terminal's master is sent on conn, a Unix socket,
// as an SCM_RIGHTS message whose payload is the terminal id. A supervisor
// that re-attaches brings a channel of its own; nil: no export.
func (t *Terminals) SetMasterChannel(conn *net.UnixConn) {
	t.mu.Lock()
	t.masters = conn
	t.mu.Unlock()
}

func (t *Terminals) masterChannel() *net.UnixConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.masters
}

// handOver sends fd, terminal termID's master, on the master channel.
func (t *Terminals) handOver(ch *net.UnixConn, termID string, fd int) error {
	_, _, err := ch.WriteMsgUnix([]byte(termID), unix.UnixRights(fd), nil)
	return err
}

// Detach lets go of every client the supervisor that went away had:
// attached ones are detached (a flow-controlled one would otherwise hold
// its program back for good, waiting for acknowledgements) and exported
// terminals are taken back and read by the hub again. The terminals and
// their programs go on.
func (t *Terminals) Detach() {
	t.mu.Lock()
	clients := t.clients
	t.clients = map[sinkKey]bool{}
	for _, s := range t.sinks {
		s.release()
	}
	// The channel went with the supervisor: nothing is exported until
	// the next one brings its own.
	ch := t.masters
	t.masters = nil
	t.mu.Unlock()
	if ch != nil {
		ch.Close()
	}
	for k := range clients {
		if t.hub.Unexport(k.term, k.client, nil) == nil {
			continue
		}
		if c, ok := t.hub.Client(k.term, k.client); ok {
			c.Close()
		}
	}
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
	// A sink waiting for the supervisor's acknowledgement would hold up the
	// hub's close: let every one go.
	t.mu.Lock()
	for _, s := range t.sinks {
		s.release()
	}
	t.mu.Unlock()
	// The hub first, so clients are told the hub closed rather than that
	// a context was cancelled.
	t.hub.Close()
	t.cancel()
}

// Handle serves one term.* message: a *wire.TermOpen (whose request id is
// reqID), TermInput, TermResize, TermClose or TermAck.
func (t *Terminals) Handle(_ context.Context, reqID string, msg wire.Message, send Sender) {
	tm, ok := msg.(wire.TermMessage)
	if !ok {
		panic(fmt.Sprintf("runner: Terminals.Handle got a %s, which names no terminal", msg.Type()))
	}
	termID, clientID := tm.Terminal()
	// fail refuses the message: a term.open with its term.opened, anything
	// else with a term.error.
	fail := func(err error) {
		code := wire.CodeBadRequest
		switch {
		case errors.Is(err, term.ErrReadOnly), errors.Is(err, term.ErrExported):
			code = wire.CodeConflict
		case errors.Is(err, term.ErrHubClosed):
			code = wire.CodeUnavailable
		case errors.Is(err, term.ErrDetached):
			code = wire.CodeNotFound
		}
		e := wire.Errorf(code, "%s: %v", msg.Type(), err)
		if _, open := msg.(*wire.TermOpen); open {
			send(reqID, &wire.TermOpened{TermID: termID, ClientID: clientID, Error: e})
			return
		}
		send("", &wire.TermError{TermID: termID, ClientID: clientID, Error: e})
	}
	if termID == "" || clientID == "" {
		fail(errors.New("termId and clientId are required"))
		return
	}
	switch m := msg.(type) {
	case *wire.TermOpen:
		t.open(reqID, m, send, fail)
		return
	case *wire.TermAck:
		t.mu.Lock()
		s := t.sinks[sinkKey{termID, clientID}]
		t.mu.Unlock()
		if s != nil {
			s.ack(m.Acked)
		}
		return
	case *wire.TermClose:
		if t.hub.Unexport(termID, clientID, m.Data) == nil {
			return
		}
	}
	c, ok := t.hub.Client(termID, clientID)
	if !ok {
		fail(wire.Errorf(wire.CodeNotFound, "client %s is not attached to terminal %s", clientID, termID))
		return
	}
	var err error
	switch m := msg.(type) {
	case *wire.TermInput:
		err = c.Input(m.Data)
	case *wire.TermResize:
		err = c.Resize(m.Cols, m.Rows)
	case *wire.TermClose:
		// Close waits for the sink's last call, which may be waiting for
		// an acknowledgement that will not come.
		t.mu.Lock()
		s := t.sinks[sinkKey{termID, clientID}]
		t.mu.Unlock()
		if s != nil {
			s.release()
		}
		c.Close()
	}
	if err != nil {
		fail(err)
	}
}

// open attaches a client (term.open), or hands the terminal over when the
// client asks for that and can have it.
func (t *Terminals) open(reqID string, m *wire.TermOpen, send Sender, fail func(error)) {
	t.mu.Lock()
	cwd := t.cwd
	t.mu.Unlock()
	req := term.AttachRequest{
		TermID: m.TermID, ClientID: m.ClientID, Role: term.Role(m.Role),
		Command: m.Command, Cwd: cwd, Cols: m.Cols, Rows: m.Rows,
	}
	t.mu.Lock()
	t.clients[sinkKey{m.TermID, m.ClientID}] = true
	t.mu.Unlock()
	if ch := t.masterChannel(); m.Export && ch != nil && t.export(ch, reqID, req, send, fail) {
		return
	}
	sink := &wireSink{send: send, reqID: reqID, termID: m.TermID, clientID: m.ClientID, window: m.Window}
	if sink.window > 0 {
		sink.credit = sync.NewCond(&sink.mu)
		sink.forget = func() { t.forgetSink(sink) }
		t.mu.Lock()
		t.sinks[sinkKey{m.TermID, m.ClientID}] = sink
		t.mu.Unlock()
	}
	if _, _, err := t.hub.Attach(t.ctx, req, sink); err != nil {
		t.forgetSink(sink)
		fail(err)
	}
}

// export hands the terminal req names over to the supervisor (term.open
// with export) and reports whether the open is answered; false means the
// terminal has other clients and req is to be attached as usual.
func (t *Terminals) export(ch *net.UnixConn, reqID string, req term.AttachRequest, send Sender, fail func(error)) bool {
	sink := &exportSink{w: &wireSink{send: send, termID: req.TermID, clientID: req.ClientID}}
	ex, err := t.hub.Export(req, sink)
	switch {
	case errors.Is(err, term.ErrExportBusy):
		return false
	case err != nil:
		fail(err)
		return true
	}
	// A program that ends during the hand-over is heard of after
	// term.opened (or the open's failure) has gone out.
	defer sink.opened()
	err = t.handOver(ch, req.TermID, ex.FD)
	unix.Close(ex.FD)
	if err != nil {
		t.hub.Unexport(req.TermID, req.ClientID, ex.Replay)
		fail(fmt.Errorf("hand the terminal over: %w", err))
		return true
	}
	send(reqID, &wire.TermOpened{TermID: req.TermID, ClientID: req.ClientID, Role: string(ex.Grant.Role),
		Cols: ex.Grant.Cols, Rows: ex.Grant.Rows, Data: ex.Replay, Export: true})
	return true
}

// exportSink tells the supervisor how a handed-over terminal ended, but
// not before term.opened has gone out: the program may end while the
// hand-over is under way.
type exportSink struct {
	w       *wireSink
	mu      sync.Mutex
	open    bool
	pending func() // the end, heard before opened
}

func (e *exportSink) Exit(code int, signal string) { e.after(func() { e.w.Exit(code, signal) }) }
func (e *exportSink) Closed(err error)             { e.after(func() { e.w.Closed(err) }) }

func (e *exportSink) after(f func()) {
	e.mu.Lock()
	if !e.open {
		e.pending = f
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	f()
}

// opened says term.opened (or the open's failure) has gone out.
func (e *exportSink) opened() {
	e.mu.Lock()
	e.open = true
	f := e.pending
	e.pending = nil
	e.mu.Unlock()
	if f != nil {
		f()
	}
}

func (t *Terminals) forgetSink(s *wireSink) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := (sinkKey{s.termID, s.clientID}); t.sinks[k] == s {
		delete(t.sinks, k)
	}
}

// wireSink turns one client's terminal stream into wire messages. With a
// window (term.open's), it sends at most window bytes beyond what the
// client acknowledged (term.ack) and waits for more; the hub, which
// queues the rest, then holds the program back (HubOptions.Pace) instead
// of cutting a client whose only fault is a busy link.
type wireSink struct {
	send             Sender
	reqID            string
	termID, clientID string

	window int64
	forget func() // drops the sink from Terminals.sinks
	mu     sync.Mutex
	credit *sync.Cond // signalled by ack and release
	sent   int64
	acked  int64
	gone   bool // released: send nothing more
}

// ack records that the client has taken acked bytes in all.
func (s *wireSink) ack(acked int64) {
	s.mu.Lock()
	s.acked = max(s.acked, acked)
	s.mu.Unlock()
	s.credit.Broadcast()
}

// release stops the sink waiting, for good: the client is going away.
func (s *wireSink) release() {
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
	s.credit.Broadcast()
}

// reserve waits until n more bytes fit in the window, and reports false
// once the sink is released.
func (s *wireSink) reserve(n int) bool {
	if s.window <= 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.gone && s.sent-s.acked >= s.window {
		s.credit.Wait()
	}
	if s.gone {
		return false
	}
	s.sent += int64(n)
	return true
}

func (s *wireSink) end() {
	if s.forget != nil {
		s.release()
		s.forget()
	}
}

func (s *wireSink) Opened(g term.Grant) {
	s.send(s.reqID, &wire.TermOpened{TermID: s.termID, ClientID: s.clientID, Role: string(g.Role), Cols: g.Cols, Rows: g.Rows})
}

// tryReserve is reserve without the wait: it reports false when n more
// bytes do not fit in the window now.
func (s *wireSink) tryReserve(n int) (ok, gone bool) {
	if s.window <= 0 {
		return true, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.gone:
		return false, true
	case s.sent-s.acked >= s.window:
		return false, false
	}
	s.sent += int64(n)
	return true, false
}

func (s *wireSink) Data(p []byte) error {
	if !s.reserve(len(p)) {
		return nil // released: the client is detaching
	}
	s.sendData(p)
	return nil
}

// TryData sends p at once, on the terminal's reader goroutine, unless the
// window is full: then the hub queues p and Data waits for the window.
// term.InlineSink.
func (s *wireSink) TryData(p []byte) (bool, error) {
	ok, gone := s.tryReserve(len(p))
	if gone {
		return true, nil // released: the client is detaching
	}
	if ok {
		s.sendData(p)
	}
	return ok, nil
}

// sendData writes p as term.data, a binary frame when the supervisor asked
// for them; the encoder keeps nothing of p.
func (s *wireSink) sendData(p []byte) {
	s.send("", &wire.TermData{TermID: s.termID, ClientID: s.clientID, Data: p})
}

func (s *wireSink) Exit(code int, signal string) {
	s.end()
	s.send("", &wire.TermExit{TermID: s.termID, ClientID: s.clientID, ExitCode: &code, Signal: signal})
}

func (s *wireSink) Closed(err error) {
	s.end()
	if err == nil {
		return
	}
	code := wire.CodeUnavailable
	if errors.Is(err, term.ErrSlowClient) {
		code = wire.CodeTimeout
	}
	s.send("", &wire.TermError{TermID: s.termID, ClientID: s.clientID,
		Error: wire.Errorf(code, "terminal stream ended: %v", err)})
}
