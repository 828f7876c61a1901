package fakemodel

import (
	"errors"
	"net/http"
)

// serveAdmin answers the control endpoints, which let tests that run the
// server as a separate process do what Go tests do with methods:
//
//	GET  /_fakemodel/requests           the request log as a JSON array
//	POST /_fakemodel/release?step=NAME  Release(NAME)
//
// Control requests are not logged.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case adminPrefix + "requests":
		if r.Method != http.MethodGet {
			adminError(w, http.StatusMethodNotAllowed, "use GET")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(mustJSON(s.Requests()))
	case adminPrefix + "release":
		if r.Method != http.MethodPost {
			adminError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		name := r.URL.Query().Get("step")
		if err := s.Release(name); err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, ErrNoSuchHold) {
				status = http.StatusNotFound
			}
			adminError(w, status, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		adminError(w, http.StatusNotFound, "no control endpoint "+r.URL.Path)
	}
}

func adminError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(obj{{"error", message}}))
}
