package term

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Defaults for HubOptions and AttachRequest fields left zero.
const (
	DefaultScrollbackBytes   = 1 << 20
	DefaultClientBufferBytes = 4 << 20
	DefaultKillGrace         = 2 * time.Second
	DefaultInputTimeout      = 5 * time.Second
	DefaultCols              = 80
	DefaultRows              = 24
	DefaultTERM              = "xterm-256color"
	fallbackShell            = "/bin/sh"
)

// HubOptions configures a Hub. The zero value is usable.
type HubOptions struct {
	// Command is what a new terminal runs when its attach request names
	// nothing. Empty means the user's $SHELL (from Env when set, else the
	// runner's environment), or /bin/sh without one.
	Command []string

	// Dir is the working directory of a new terminal whose attach request
	// names none. Empty means the runner's own.
	Dir string

	// Env is the base environment of new terminals; an attach request's Env
	// is appended and wins. Nil means the runner's environment. TERM is set
	// to DefaultTERM unless one of them sets it.
	Env []string

	// ScrollbackBytes is how much recent output each terminal keeps to
	// replay to clients that attach later. Zero or less means
	// DefaultScrollbackBytes.
	ScrollbackBytes int

	// ClientBufferBytes is how far, in bytes of live output, a client may
	// fall behind before its stream is cut with ErrSlowClient. The replay
	// sent on attach does not count. Zero or less means
	// DefaultClientBufferBytes.
	ClientBufferBytes int

	// KillGrace is how long a terminal's processes have between SIGHUP and
	// SIGKILL. Zero or less means DefaultKillGrace.
	KillGrace time.Duration

	// InputTimeout bounds one Client.Input: a program that stops reading
	// its input fails the write instead of blocking the caller. Zero or
	// less means DefaultInputTimeout.
	InputTimeout time.Duration

	// Logger receives lifecycle events. Nil means no logging.
	Logger *zap.Logger

	// Pace holds a terminal's reader back, instead of cutting anyone, while
	// every attached client is ClientBufferBytes behind: the program then
	// waits, as it would for a terminal window that draws slower than it
	// writes. A client behind while another keeps up is still cut. It suits
	// clients that share one consumer, like the runner's link to the
	// supervisor, which fans the output out to its own clients: when that
	// link falls behind, no client is to blame.
	Pace bool
}

func (o HubOptions) withDefaults() HubOptions {
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if len(o.Command) == 0 {
		shell := lookupEnv(o.Env, "SHELL")
		if shell == "" {
			shell = fallbackShell
		}
		o.Command = []string{shell}
	}
	if o.ScrollbackBytes <= 0 {
		o.ScrollbackBytes = DefaultScrollbackBytes
	}
	if o.ClientBufferBytes <= 0 {
		o.ClientBufferBytes = DefaultClientBufferBytes
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.InputTimeout <= 0 {
		o.InputTimeout = DefaultInputTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// Hub owns the terminals of one session, keyed by terminal id.
type Hub struct {
	opts HubOptions
	log  *zap.Logger
	wg   sync.WaitGroup // every goroutine the hub started

	mu     sync.Mutex
	terms  map[string]*terminal
	closed bool
}

// NewHub returns a hub with no terminals.
func NewHub(opts HubOptions) *Hub {
	opts = opts.withDefaults()
	return &Hub{opts: opts, log: opts.Logger, terms: make(map[string]*terminal)}
}

// AttachRequest asks to attach a client to a terminal.
type AttachRequest struct {
	TermID   string
	ClientID string // unique among the terminal's clients

	// Role is what the client asks for; Grant.Role is what it gets. Empty
	// asks for RoleReadOnly.
	Role Role

	// Command, Cwd and Env shape the terminal's program and are used only
	// when the terminal does not exist yet.
	Command []string
	Cwd     string
	Env     []string

	// Cols and Rows size a new terminal (zero means DefaultCols by
	// DefaultRows). A client granted RoleOwner on an existing terminal
	// resizes it to them; other clients' sizes are ignored.
	Cols, Rows uint16
}

func (r AttachRequest) validate() error {
	if r.TermID == "" {
		return errors.New("term: attach: terminal id is empty")
	}
	if r.ClientID == "" {
		return errors.New("term: attach: client id is empty")
	}
	switch r.Role {
	case "", RoleOwner, RoleReadOnly:
	default:
		return fmt.Errorf("term: attach: unknown role %q (want %q or %q)", r.Role, RoleOwner, RoleReadOnly)
	}
	if len(r.Command) > 0 && r.Command[0] == "" {
		return errors.New("term: attach: command names no program")
	}
	return nil
}

// Grant is what an attach was given.
type Grant struct {
	Role       Role
	Cols, Rows uint16 // the terminal's size now
	Created    bool   // this attach started the terminal
	Pid        int    // the terminal's program, leader of its session

	// ReplayBytes is how much scrollback opens the client's stream; live
	// output starts right after it.
	ReplayBytes int
}

// Attach attaches a client to the terminal req.TermID, starting the
// terminal's program first if the id is new (or its previous program has
// exited). The first client asking for RoleOwner while no owner is attached
// gets it; every other client is read-only. The stream then flows to sink:
// the grant, the scrollback, live output, and Exit or Closed.
//
// ctx bounds the attachment, not the terminal: when ctx is done the client
// is detached and its Sink gets Closed(context.Cause(ctx)). Pass the context
// of the connection the client lives on, not one scoped to a request.
//
// A program that cannot be started yields a *StartError and no terminal.
func (h *Hub) Attach(ctx context.Context, req AttachRequest, sink Sink) (*Client, Grant, error) {
	if err := req.validate(); err != nil {
		return nil, Grant{}, err
	}
	if sink == nil {
		return nil, Grant{}, errors.New("term: attach: nil sink")
	}
	if err := ctx.Err(); err != nil {
		return nil, Grant{}, fmt.Errorf("term: attach: %w", err)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, Grant{}, ErrHubClosed
	}
	t, created := h.terms[req.TermID], false
	if t == nil {
		var err error
		if t, err = h.startTerminal(req); err != nil {
			return nil, Grant{}, err
		}
		h.terms[req.TermID], created = t, true
	}
	c, grant, err := t.join(req, sink, created)
	if err != nil {
		return nil, Grant{}, err
	}
	// The pump calls stopCtx on its way out and, if the callback already
	// started, waits for it, so no goroutine outlives the client.
	ctxDetached := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(ctxDetached)
		t.detach(c, &ending{err: context.Cause(ctx)})
	})
	c.stopCtx = func() {
		if !stop() {
			<-ctxDetached
		}
	}
	h.wg.Add(1)
	go c.pump()
	return c, grant, nil
}

// Client returns the attached client clientID of terminal termID.
func (h *Hub) Client(termID, clientID string) (*Client, bool) {
	h.mu.Lock()
	t := h.terms[termID]
	h.mu.Unlock()
	if t == nil {
		return nil, false
	}
	return t.client(clientID)
}

// Clients returns how many clients are attached across all terminals.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.terms {
		n += t.clientCount()
	}
	return n
}

// Active reports whether any client is attached or any terminal exported.
// A runner with an active hub is being watched and must not be reaped as
// idle.
func (h *Hub) Active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.terms {
		if t.active() {
			return true
		}
	}
	return false
}

// Terminals returns how many terminals are running, attached or not.
func (h *Hub) Terminals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.terms)
}

// forget drops t once its program has ended, so its id can start afresh.
func (h *Hub) forget(t *terminal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.terms[t.id] == t {
		delete(h.terms, t.id)
	}
}

// Close shuts every terminal down: each client's Sink gets
// Closed(ErrHubClosed), each terminal's session is hung up and, after
// HubOptions.KillGrace, killed. Close returns when every process the hub
// started has been reaped and every goroutine it started has ended, which
// includes waiting for Sink calls in progress to return. Later attaches get
// ErrHubClosed.
func (h *Hub) Close() error {
	h.mu.Lock()
	h.closed = true
	terms := make([]*terminal, 0, len(h.terms))
	for _, t := range h.terms {
		terms = append(terms, t)
	}
	h.mu.Unlock()

	errs := make([]error, len(terms))
	var wg sync.WaitGroup
	for i, t := range terms {
		wg.Go(func() {
			if err := t.shutdown(); err != nil {
				errs[i] = fmt.Errorf("term: close terminal %q: %w", t.id, err)
			}
		})
	}
	wg.Wait()
	h.wg.Wait()
	return errors.Join(errs...)
}
