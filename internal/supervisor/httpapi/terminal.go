package httpapi

// The terminal WebSocket: GET /v1/sessions/{id}/terminals/{termId}. One
// connection is one client of a session terminal, fanned out from a single
// runner client (termmux.go); docs/api.md describes the protocol and
// docs/terminal.md the terminal's semantics.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

const (
	// termBufferBytes is how much output may wait for one WebSocket client
	// before it is cut as too slow. The program is paced to the fastest
	// client, which may have up to termWindowBytes waiting too, so a client
	// may fall termBufferBytes-termWindowBytes (4 MiB) behind that one.
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
	// maxTermIDLen bounds a terminal id in the path.
	maxTermIDLen = 64
)

// termQuery is what a client asked of a terminal.
type termQuery struct {
	role       string
	cols, rows uint16
	command    []string
}

func parseTermQuery(v url.Values) (termQuery, error) {
	var q termQuery
	switch role := v.Get("role"); role {
	case "", api.RoleReadOnly:
		q.role = api.RoleReadOnly
	case api.RoleOwner:
		q.role = api.RoleOwner
	default:
		return q, wire.Errorf(wire.CodeBadRequest, "role=%q: want owner or read-only", role)
	}
	var err error
	if q.cols, err = termSize(v, "cols"); err != nil {
		return q, err
	}
	if q.rows, err = termSize(v, "rows"); err != nil {
		return q, err
	}
	q.command = v["command"]
	if len(q.command) > 0 && q.command[0] == "" {
		return q, wire.Errorf(wire.CodeBadRequest, "command: the program name (the first command=) is empty")
	}
	return q, nil
}

func termSize(v url.Values, name string) (uint16, error) {
	s := v.Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, wire.Errorf(wire.CodeBadRequest, "%s=%q: want a whole number from 1 to 65535", name, s)
	}
	return uint16(n), nil
}

// validTermID reports whether id is a usable terminal id: letters, digits,
// '.', '_' and '-', at most maxTermIDLen of them.
func validTermID(id string) bool {
	if id == "" || len(id) > maxTermIDLen {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
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

// checkHandshake refuses, with the JSON error, an upgrade request that
// websocket.Accept would refuse, so that nothing starts for a request that
// cannot become a WebSocket: every check comes before the terminal opens.
// It reports whether the request may go on.
func checkHandshake(w http.ResponseWriter, r *http.Request) bool {
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") || !r.ProtoAtLeast(1, 1) {
		w.Header().Set("Upgrade", "websocket")
		writeErrorStatus(w, http.StatusUpgradeRequired, wire.Errorf(wire.CodeBadRequest,
			"this endpoint is a WebSocket: send Connection: Upgrade and Upgrade: websocket"))
		return false
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		writeError(w, wire.Errorf(wire.CodeBadRequest, "Sec-WebSocket-Version %q: only 13 is spoken", v))
		return false
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		writeError(w, wire.Errorf(wire.CodeBadRequest, "want one Sec-WebSocket-Key header, not %d", len(keys)))
		return false
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(k) != 16 {
		writeError(w, wire.Errorf(wire.CodeBadRequest, "Sec-WebSocket-Key: want 16 bytes in base64"))
		return false
	}
	return true
}

// headerHasToken reports whether a comma-separated header holds token, in
// any case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), token) {
				return true
			}
		}
	}
	return false
}

func newClientID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("client id: %w", err)
	}
	return "ws-" + hex.EncodeToString(b[:]), nil
}

// terminals serves the terminal WebSocket.
type terminals struct {
	log   *zap.Logger
	muxes *termMuxes
}

func newTerminals(m termManager, log *zap.Logger) *terminals {
	return &terminals{log: log, muxes: newTermMuxes(m)}
}

// serve attaches a WebSocket client to a terminal. Every check of the
// request comes first; then the terminal is opened before the upgrade, so a
// request the runner refuses (unknown session, a program that cannot start)
// gets an ordinary JSON error.
func (h *terminals) serve(w http.ResponseWriter, r *http.Request) {
	id, termID := r.PathValue("id"), r.PathValue("termId")
	if !validTermID(termID) {
		writeError(w, wire.Errorf(wire.CodeBadRequest,
			"terminal id %q: want 1 to %d letters, digits, '.', '_' or '-'", termID, maxTermIDLen))
		return
	}
	q, err := parseTermQuery(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	if !checkHandshake(w, r) {
		// Checked before the terminal opens: a request that cannot
		// become a WebSocket must not start a program nobody can see.
		return
	}
	clientID, err := newClientID()
	if err != nil {
		writeError(w, err)
		return
	}
	out := newTermOutbox(termBufferBytes)
	c, grant, err := h.muxes.attach(r.Context(), id, termID, q, out)
	if err != nil {
		writeError(w, err)
		return
	}
	defer c.detach()
	log := h.log.With(zap.String("session", id), zap.String("term", termID), zap.String("client", clientID))
	// The guard in front of every listener (webauth) has checked Origin
	// and Host before this handler ran, and checkHandshake what Accept
	// checks, so Accept does not refuse a request once the terminal runs.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		// Accept has answered the request.
		log.Debug("terminal upgrade failed", zap.Error(err))
		return
	}
	conn.SetReadLimit(termReadLimit)
	log.Debug("terminal attached", zap.String("role", grant.role))

	// Cancelling a read closes the connection at once, so the reader does
	// not use the request's context: on a supervisor shutdown the writer
	// first says why, then closes.
	connCtx, stop := context.WithCancel(context.WithoutCancel(r.Context()))
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer stop()
		first := api.TermFrame{Type: api.FrameOpened, TermID: termID, ClientID: clientID,
			Role: grant.role, Cols: grant.cols, Rows: grant.rows}
		if err := out.run(connCtx, r.Context(), conn, first, c.mux.progress); err != nil {
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
