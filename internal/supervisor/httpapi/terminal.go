package httpapi

// The terminal WebSocket: GET /v1/sessions/{id}/terminals/{termId}. This
// file checks the request and upgrades it; the terminal and the connection
// from then on belong to the terminal host (internal/supervisor/termhost).
// docs/api.md describes the protocol and docs/terminal.md the terminal's
// semantics.

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/supervisor/termhost"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// maxTermIDLen bounds a terminal id in the path.
const maxTermIDLen = 64

// terminalHost owns the session terminals: it opens the terminal a checked
// request asks for, calls upgrade, and serves the connection upgrade
// returns until it ends (termhost.Host.Attach). An error before upgrade is
// the request's to answer.
type terminalHost interface {
	Attach(ctx context.Context, req termhost.Request, upgrade func() (*websocket.Conn, error)) error
}

// parseTermQuery reads what a client asks of a terminal: its role, size
// and, for a terminal it starts, the program.
func parseTermQuery(v url.Values) (termhost.Request, error) {
	var q termhost.Request
	switch role := v.Get("role"); role {
	case "", api.RoleReadOnly:
		q.Role = api.RoleReadOnly
	case api.RoleOwner:
		q.Role = api.RoleOwner
	default:
		return q, wire.Errorf(wire.CodeBadRequest, "role=%q: want owner or read-only", role)
	}
	var err error
	if q.Cols, err = termSize(v, "cols"); err != nil {
		return q, err
	}
	if q.Rows, err = termSize(v, "rows"); err != nil {
		return q, err
	}
	q.Command = v["command"]
	if len(q.Command) > 0 && q.Command[0] == "" {
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

// terminals serves the terminal WebSocket.
type terminals struct {
	host terminalHost
}

// serve checks a terminal request and hands it to the host. Every check
// comes first; the host opens the terminal before the upgrade, so a request
// the runner refuses (unknown session, a program that cannot start) gets an
// ordinary JSON error.
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
	q.Session, q.TermID = id, termID
	upgraded := false
	err = h.host.Attach(r.Context(), q, func() (*websocket.Conn, error) {
		upgraded = true
		// The guard in front of every listener (webauth) has checked
		// Origin and Host before this handler ran, and checkHandshake
		// what Accept checks, so Accept does not refuse a request once
		// the terminal runs. When it does, it has answered the request.
		return websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	})
	if err != nil && !upgraded {
		writeError(w, err)
	}
}
