package termhost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

const (
	// termBufferBytes is how much output may wait for one client before
	// it is cut as too slow. The program is paced to the fastest client,
	// which may have up to termWindowBytes waiting too, so a client may
	// fall termBufferBytes-termWindowBytes (4 MiB) behind that one.
	termBufferBytes = termWindowBytes + 4<<20
	// termReadLimit bounds one message from a client (a large paste).
	termReadLimit = 1 << 20
	// termInputChunk bounds the keystrokes in one term.input to the runner.
	termInputChunk = 64 << 10
	// termWriteTimeout bounds one frame write: a client that reads nothing
	// for this long loses its connection.
	termWriteTimeout = 20 * time.Second
	// termPingInterval is how often an idle-looking client is pinged, so a
	// peer that vanished without closing does not keep its runner alive.
	termPingInterval = 30 * time.Second
	termPingTimeout  = 20 * time.Second
)

// Manager is what the terminals need of the supervisor: the terminal
// operations of the runner link (docs/wire.md), and the buffers terminal
// output travels in.
type Manager interface {
	OpenTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, error)
	// ExportTerm is OpenTerm asking the runner to hand the terminal over:
	// a non-nil master is the caller's to read, type into and resize, and
	// UnexportTerm gives it back.
	ExportTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, *os.File, error)
	UnexportTerm(id, termID, clientID string, scrollback []byte) error
	TermInput(id string, in wire.TermInput) error
	TermResize(id string, r wire.TermResize) error
	TermAck(id string, a wire.TermAck) error
	CloseTerm(id, termID, clientID string) error
	// RecycleTermData takes back the Data of a term.data message the sink
	// got, or a buffer from TermBuffer, once nothing refers to it any more,
	// to reuse it.
	RecycleTermData(p []byte)
	// TermBuffer returns a buffer of length n for terminal output, from
	// the buffers RecycleTermData takes back.
	TermBuffer(n int) []byte
}

// Request is what a client asks of a terminal, checked by the caller.
type Request struct {
	Session string
	TermID  string
	// Role is api.RoleOwner or api.RoleReadOnly.
	Role string
	// Cols and Rows are the client's size; zero: none given.
	Cols, Rows uint16
	// Command is the program of a terminal this attach starts.
	Command []string
}

// Host serves the terminals of one supervisor's sessions.
type Host struct {
	log   *zap.Logger
	muxes *termMuxes
}

// New returns a host for the terminals of m's sessions.
func New(m Manager, log *zap.Logger) *Host {
	if log == nil {
		log = zap.NewNop()
	}
	return &Host{log: log, muxes: newTermMuxes(m)}
}

// Attach joins a client to a terminal, starting its program on first use,
// and serves the client until its connection ends. The terminal is opened
// before upgrade is called, so a request the runner refuses (unknown
// session, a program that cannot start) gets Attach's error while the
// request can still be answered; upgrade turns the request into the
// client's WebSocket. Attach returns the error of the open or of upgrade,
// and nil once a connection it served has ended. ctx is the request's: its
// end tells the client the supervisor is going away.
func (h *Host) Attach(ctx context.Context, req Request, upgrade func() (*websocket.Conn, error)) error {
	clientID, err := newClientID()
	if err != nil {
		return err
	}
	out := newTermOutbox(termBufferBytes)
	c, grant, err := h.muxes.attach(ctx, req, out)
	if err != nil {
		return err
	}
	defer c.detach()
	log := h.log.With(zap.String("session", req.Session), zap.String("term", req.TermID), zap.String("client", clientID))
	conn, err := upgrade()
	if err != nil {
		// upgrade has answered the request.
		log.Debug("terminal upgrade failed", zap.Error(err))
		return err
	}
	conn.SetReadLimit(termReadLimit)
	log.Debug("terminal attached", zap.String("role", grant.role))

	// Cancelling a read closes the connection at once, so the reader does
	// not use the request's context: on a supervisor shutdown the writer
	// first says why, then closes.
	connCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer stop()
		first := api.TermFrame{Type: api.FrameOpened, TermID: req.TermID, ClientID: clientID,
			Role: grant.role, Cols: grant.cols, Rows: grant.rows}
		if err := out.run(connCtx, ctx, conn, first, c.mux.progress); err != nil {
			log.Debug("terminal stream ended", zap.Error(err))
		}
	}()
	go func() {
		defer wg.Done()
		keepAlive(connCtx, conn, stop)
	}()
	err = readInput(connCtx, conn, c)
	stop()
	wg.Wait()
	conn.CloseNow()
	log.Debug("terminal detached", zap.Error(err))
	return nil
}

func newClientID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("client id: %w", err)
	}
	return "ws-" + hex.EncodeToString(b[:]), nil
}

// parseControl reads a client's text frame.
func parseControl(p []byte) (api.TermFrame, error) {
	var f api.TermFrame
	if err := json.Unmarshal(p, &f); err != nil {
		return f, wire.Errorf(wire.CodeBadRequest, "text frame: want a JSON object like {\"type\":\"resize\",\"cols\":80,\"rows\":24}: %v", err)
	}
	switch f.Type {
	case api.FrameResize:
		if f.Cols == 0 || f.Rows == 0 {
			return f, wire.Errorf(wire.CodeBadRequest, "resize: cols and rows must both be from 1 to 65535")
		}
		return f, nil
	case "":
		return f, wire.Errorf(wire.CodeBadRequest, "text frame has no \"type\" (the only one a client sends is resize)")
	default:
		return f, wire.Errorf(wire.CodeBadRequest, "text frame type %q: the only one a client sends is resize", f.Type)
	}
}

// readInput relays a client's keystrokes and resizes until the connection
// ends. A read-only client's are refused with an error frame.
func readInput(ctx context.Context, conn *websocket.Conn, c *muxClient) error {
	for {
		typ, p, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		switch typ {
		case websocket.MessageBinary:
			for len(p) > 0 {
				n := min(len(p), termInputChunk)
				if err := c.input(p[:n]); err != nil {
					c.out.notice(fmt.Errorf("input: %w", err))
					break
				}
				p = p[n:]
			}
		case websocket.MessageText:
			f, err := parseControl(p)
			if err != nil {
				c.out.notice(err)
				continue
			}
			if err := c.resize(f.Cols, f.Rows); err != nil {
				c.out.notice(fmt.Errorf("resize: %w", err))
			}
		}
	}
}

// keepAlive pings the client until ctx ends; a client that does not answer
// in time is disconnected through stop.
func keepAlive(ctx context.Context, conn *websocket.Conn, stop context.CancelFunc) {
	t := time.NewTicker(termPingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, termPingTimeout)
		err := conn.Ping(pctx)
		cancel()
		if err != nil {
			stop()
			return
		}
	}
}
