// Package httpapi serves a supervisor's sessions over HTTP: create, list,
// get and delete sessions, post control commands, and stream events as
// Server-Sent Events or NDJSON. docs/api.md is its reference.
//
// Every error is a JSON body {"ok":false,"error":{message,code,statusCode}}
// with the HTTP status of its code (api.StatusFor): errors carry codes
// only, and this is the one place they become HTTP statuses.
package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/graph/service"
	"github.com/corral-dev/corral/internal/supervisor/termhost"
	"github.com/corral-dev/corral/internal/supervisor/webauth"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// Options tune a Handler.
type Options struct {
	Logger *zap.Logger
	// KeepAlive is how often an idle event stream gets a comment line
	// (default 15s), so proxies and clients see the connection is alive.
	KeepAlive time.Duration
	// Console, when set, serves the web console's page at / and its
	// files under /assets/ (internal/console).
	Console http.Handler
	// Metrics, when set, serves GET /metrics (internal/metrics).
	Metrics http.Handler
	// NotReady, when set, says why the supervisor cannot take work now
	// (nothing when it can), for /v1/health.
	NotReady func() []string
	// Graphs serves /v1/graphs; nil answers them unavailable.
	Graphs *service.Service
	// Credentials, when set, is the store /v1/credentials manages.
	Credentials CredentialStore
	// Auth serves the browser sign-in routes (/v1/auth/...); without it
	// they answer not_found. Its Guard must wrap the handler on every
	// listener: the handler itself checks no credential, Origin or Host.
	Auth *webauth.Authority
}

type server struct {
	m         Sessions
	log       *zap.Logger
	keepAlive time.Duration
	notReady  func() []string
	creds     CredentialStore
	auth      *webauth.Authority
}

// New returns the API handler for m (FromManager for one supervisor's
// sessions).
func New(m Sessions, opts Options) http.Handler {
	s := &server{m: m, log: opts.Logger, keepAlive: opts.KeepAlive, notReady: opts.NotReady, creds: opts.Credentials, auth: opts.Auth}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.keepAlive <= 0 {
		s.keepAlive = 15 * time.Second
	}
	mux := http.NewServeMux()
	v := api.Version
	mux.HandleFunc("GET "+v+"/health", s.health)
	mux.HandleFunc("POST "+v+"/sessions", s.create)
	mux.HandleFunc("GET "+v+"/sessions", s.list)
	mux.HandleFunc("GET "+v+"/sessions/{id}", s.get)
	mux.HandleFunc("DELETE "+v+"/sessions/{id}", s.delete)
	mux.HandleFunc("POST "+v+"/sessions/{id}/commands", s.command)
	mux.HandleFunc("GET "+v+"/sessions/{id}/events", s.events)
	mux.HandleFunc("GET "+v+"/sessions/{id}/terminals/{termId}", (&terminals{termhost.New(m, s.log)}).serve)
	mux.HandleFunc("GET "+v+"/sessions/{id}/workspace", s.workspaceGet)
	mux.HandleFunc("POST "+v+"/sessions/{id}/workspace/commit", s.workspaceCommit)
	mux.HandleFunc("POST "+v+"/sessions/{id}/workspace/merge", s.workspaceMerge)
	mux.HandleFunc("GET "+v+"/events", s.feed)
	mux.HandleFunc("GET "+v+"/openapi.json", s.openAPI)
	mux.HandleFunc("GET "+v+"/sessions/{id}/wait", s.wait)
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics)
	}
	mux.HandleFunc("GET "+v+"/engines", s.engines)
	mux.HandleFunc("GET "+v+"/credentials", s.credentialsList)
	mux.HandleFunc("PUT "+v+"/credentials/{item}", s.credentialSet)
	mux.HandleFunc("DELETE "+v+"/credentials/{item}", s.credentialDelete)
	if opts.Console != nil {
		mux.Handle("GET /{$}", opts.Console)
		mux.Handle("GET /assets/", opts.Console)
	}
	g := newGraphs(s, opts.Graphs)
	mux.HandleFunc("POST "+v+"/graphs", g.open)
	mux.HandleFunc("GET "+v+"/graphs", g.list)
	mux.HandleFunc("GET "+v+"/graphs/{run}", g.status)
	mux.HandleFunc("GET "+v+"/graphs/{run}/next", g.next)
	mux.HandleFunc("POST "+v+"/graphs/{run}/nodes/{node}/run", g.run)
	mux.HandleFunc("POST "+v+"/graphs/{run}/nodes/{node}/submit", g.submit)
	mux.HandleFunc("POST "+v+"/graphs/{run}/retry", g.retry)
	mux.HandleFunc("GET "+v+"/graphs/{run}/events", g.events)
	mux.HandleFunc("POST "+v+"/auth/session", s.signIn) // webauth.SessionPath
	mux.HandleFunc("DELETE "+v+"/auth/session", s.signOut)
	mux.HandleFunc("POST "+v+"/auth/ticket", s.ticket)  // webauth.TicketPath
	mux.HandleFunc("POST "+v+"/auth/code", s.loginCode) // webauth.CodePath
	// Known paths with another method, and unknown paths, still answer
	// in JSON.
	for path, allow := range map[string]string{
		v + "/health":                           "GET",
		v + "/sessions":                         "GET, POST",
		v + "/sessions/{id}":                    "GET, DELETE",
		v + "/sessions/{id}/commands":           "POST",
		v + "/sessions/{id}/events":             "GET",
		v + "/sessions/{id}/terminals/{termId}": "GET",
		v + "/events":                           "GET",
		v + "/openapi.json":                     "GET",
		v + "/sessions/{id}/wait":               "GET",
		v + "/graphs":                           "GET, POST",
		v + "/graphs/{run}":                     "GET",
		v + "/graphs/{run}/next":                "GET",
		v + "/graphs/{run}/nodes/{node}/run":    "POST",
		v + "/graphs/{run}/nodes/{node}/submit": "POST",
		v + "/graphs/{run}/retry":               "POST",
		v + "/graphs/{run}/events":              "GET",
		v + "/engines":                          "GET",
		v + "/credentials":                      "GET",
		v + "/credentials/{item}":               "PUT, DELETE",
		v + "/auth/session":                     "POST, DELETE",
		v + "/auth/ticket":                      "POST",
		v + "/auth/code":                        "POST",
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeErrorStatus(w, http.StatusMethodNotAllowed, wire.Errorf(wire.CodeBadRequest,
				"%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, allow))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, wire.Errorf(wire.CodeNotFound, "no such endpoint: %s %s (see docs/api.md)", r.Method, r.URL.Path))
	})
	return cleanPaths(mux)
}

// cleanPaths answers a path that is not in its clean form (".", "..",
// doubled slashes: session ids like "..", "//etc/passwd") with the JSON
// not_found, where ServeMux would answer an HTML redirect to another path.
func cleanPaths(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p {
			writeError(w, wire.Errorf(wire.CodeNotFound, "no such endpoint: %s %q (a path has no empty, \".\" or \"..\" parts)", r.Method, p))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	build := buildinfo.Read()
	h := api.HealthReply{OK: true, Proto: wire.ProtocolVersion, LiveSessions: s.m.LiveCount(),
		Version: build.Version, Revision: build.Revision, Go: build.GoVersion}
	if s.m.Closing() {
		h.NotReady = append(h.NotReady, "the supervisor is shutting down")
	}
	if s.notReady != nil {
		h.NotReady = append(h.NotReady, s.notReady()...)
	}
	h.Ready = len(h.NotReady) == 0
	writeJSON(w, http.StatusOK, h)
}

func (s *server) create(w http.ResponseWriter, r *http.Request) {
	var spec wire.Spec
	if err := decodeBody(w, r, &spec); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.m.Create(r.Context(), spec)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", api.Version+"/sessions/"+sess.ID)
	writeJSON(w, http.StatusCreated, api.SessionReply{OK: true, Session: &sess})
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	list, err := s.m.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SessionsReply{OK: true, Sessions: list})
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	sess, err := s.m.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SessionReply{OK: true, Session: &sess})
}

func (s *server) delete(w http.ResponseWriter, r *http.Request) {
	if err := s.m.Delete(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Reply{OK: true})
}

func (s *server) command(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := decodeBody(w, r, &raw); err != nil {
		writeError(w, err)
		return
	}
	req, requestID, err := command.DecodeWithID(raw)
	if err != nil {
		writeError(w, fmt.Errorf("request body: %w", err))
		return
	}
	reply, err := s.m.Command(command.WithRequestID(r.Context(), requestID), r.PathValue("id"), req)
	if err != nil {
		writeError(w, err)
		return
	}
	if !reply.OK {
		if reply.Error == nil {
			reply.Error = wire.Errorf(wire.CodeInternal, "runner refused %s without saying why", req.Cmd())
		}
		writeError(w, reply.Error)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// decodeBody reads one JSON object into v, refusing unknown fields, trailing
// data and bodies over maxBody.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeBodyLimit(w, r, v, maxBody)
}

// decodeBodyLimit is decodeBody with a bound of limit bytes.
func decodeBodyLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			return wire.Errorf(wire.CodeBadRequest, "request body: one JSON object expected, found more after it")
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var big *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return wire.Errorf(wire.CodeBadRequest, "request body is empty: send a JSON object")
	case errors.As(err, &big):
		return wire.Errorf(wire.CodeBadRequest, "request body is larger than %d bytes", big.Limit)
	case errors.As(err, &syn):
		return wire.Errorf(wire.CodeBadRequest, "request body is not valid JSON (at byte %d): %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return wire.Errorf(wire.CodeBadRequest, "request body must be a JSON object, not %s", typ.Value)
		}
		return wire.Errorf(wire.CodeBadRequest, "request body: field %q must be %s, not %s", typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return wire.Errorf(wire.CodeBadRequest, "request body: JSON ends too early")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return wire.Errorf(wire.CodeBadRequest, "request body: %s", strings.TrimPrefix(err.Error(), "json: "))
	default:
		return wire.Errorf(wire.CodeBadRequest, "request body: %v", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		raw, _ = json.Marshal(api.ErrorReply{Error: api.NewError(fmt.Errorf("encode reply: %w", err))})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(raw, '\n'))
}

// writeError answers err with the HTTP status of its code.
func writeError(w http.ResponseWriter, err error) {
	e := api.NewError(err)
	writeJSON(w, e.StatusCode, api.ErrorReply{Error: e})
}

// writeErrorStatus answers err with a status of the request's own (405,
// 426) rather than its code's.
func writeErrorStatus(w http.ResponseWriter, status int, err error) {
	e := api.NewError(err)
	e.StatusCode = status
	writeJSON(w, status, api.ErrorReply{Error: e})
}
