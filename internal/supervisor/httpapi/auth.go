package httpapi

// The browser sign-in routes, /v1/auth/...: the mechanism (cookies,
// tickets, login codes, and the guard that checks them on every request) is
// internal/supervisor/webauth; these handlers only read and write the JSON.

import (
	"net/http"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// maxAuthBody bounds the body of a sign-in, which may come from a caller
// without a credential.
const maxAuthBody = 4 << 10

var errNoAuth = wire.Errorf(wire.CodeNotFound, "this supervisor does not sign browsers in")

func (s *server) signIn(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		writeError(w, errNoAuth)
		return
	}
	var req api.SignInRequest
	if r.ContentLength != 0 {
		if err := decodeBodyLimit(w, r, &req, maxAuthBody); err != nil {
			writeError(w, err)
			return
		}
	}
	exp, err := s.auth.SignIn(w, r, req.Code)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SignInReply{OK: true, ExpiresAt: exp})
}

func (s *server) signOut(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		writeError(w, errNoAuth)
		return
	}
	s.auth.SignOut(w, r)
	writeJSON(w, http.StatusOK, wire.Reply{OK: true})
}

func (s *server) ticket(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		writeError(w, errNoAuth)
		return
	}
	t, err := s.auth.NewTicket(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.TicketReply{OK: true, Ticket: t.Value, ExpiresAt: t.ExpiresAt})
}

func (s *server) loginCode(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		writeError(w, errNoAuth)
		return
	}
	c, err := s.auth.NewLoginCode(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.LoginCodeReply{OK: true, Code: c.Value, ExpiresAt: c.ExpiresAt})
}
