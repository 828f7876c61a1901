package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Labels the request log uses for answers that no scenario step gave.
const (
	labelFallback    = "fallback"
	labelAuth        = "auth"
	labelBadRequest  = "bad-request"
	labelModels      = "models"
	labelCountTokens = "count-tokens"
	labelHead        = "head"
	labelNotFound    = "not-found"
	labelInvalid     = "invalid-scenario"
)

// ErrNonLoopback is returned by Start for an address that is not on the
// loopback interface, unless AllowNonLoopback was given.
var ErrNonLoopback = errors.New("refusing to listen on a non-loopback address")

// Server answers model requests from a Scenario. It is an http.Handler; Start
// also listens and serves. All methods are safe for concurrent use.
type Server struct {
	scenario Scenario
	invalid  error // the scenario's validation error, answered to every request
	fallback *Step
	gates    map[string]*gate // by step name, for steps that hold

	logger           *zap.Logger
	log              *jsonlLog
	allowNonLoopback bool
	vars             map[string]string // from WithVars

	mu         sync.Mutex
	closed     bool
	seq        int
	head       int   // index of the script's next step
	scriptUsed []int // answers given, per script step
	sideUsed   []int // answers given, per side step
	requests   []Request
	changed    chan struct{} // closed and replaced whenever requests change
	httpServer *http.Server
	url        string
	stopOnDone func() bool

	closing   chan struct{} // closed by Close: wakes held and hanging answers
	handlers  sync.WaitGroup
	active    atomic.Int64 // handlers running, for leak checks in tests
	serveDone chan struct{}
}

// Option configures a Server.
type Option func(*Server)

// WithLogger makes the server log each request and every fallback answer.
func WithLogger(l *zap.Logger) Option {
	return func(s *Server) {
		if l != nil {
			s.logger = l
		}
	}
}

// WithLog appends the request log to w as JSON lines (see docs/fakemodel.md).
func WithLog(w io.Writer) Option {
	return func(s *Server) { s.log = &jsonlLog{w: w} }
}

// AllowNonLoopback lets Start listen on addresses other than loopback.
func AllowNonLoopback() Option {
	return func(s *Server) { s.allowNonLoopback = true }
}

// New returns a server for sc. A scenario that fails Validate makes Start
// return the validation error and every request get a 500 that quotes it.
// The server keeps its own copy of sc.
func New(sc Scenario, opts ...Option) *Server {
	sc = sc.clone()
	s := &Server{
		scenario:   sc,
		invalid:    sc.Validate(),
		fallback:   sc.Fallback,
		gates:      map[string]*gate{},
		logger:     zap.NewNop(),
		scriptUsed: make([]int, len(sc.Steps)),
		sideUsed:   make([]int, len(sc.Side)),
		changed:    make(chan struct{}),
		closing:    make(chan struct{}),
	}
	if s.fallback == nil {
		s.fallback = &Step{Text: "done"}
	}
	for _, steps := range [][]Step{sc.Steps, sc.Side, {*s.fallback}} {
		for _, st := range steps {
			if st.Hold && st.Name != "" {
				s.gates[st.Name] = newGate()
			}
		}
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Start listens on addr (for tests, "127.0.0.1:0") and serves until ctx is
// done or Close is called. It returns the base URL, e.g.
// "http://127.0.0.1:43121"; Claude Code takes it as is, OpenAI clients want
// it with "/v1" appended.
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	if s.invalid != nil {
		return "", s.invalid
	}
	if !s.allowNonLoopback {
		if err := checkLoopbackAddr(addr); err != nil {
			return "", err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("fake model server: listen: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !s.allowNonLoopback && !tcp.IP.IsLoopback() {
		ln.Close()
		return "", fmt.Errorf("%w: %s resolved to %s", ErrNonLoopback, addr, tcp.IP)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(s.logger),
	}
	s.mu.Lock()
	if s.closed || s.httpServer != nil {
		s.mu.Unlock()
		ln.Close()
		return "", errors.New("fake model server: already started or closed")
	}
	s.httpServer = srv
	s.url = "http://" + ln.Addr().String()
	s.serveDone = make(chan struct{})
	s.stopOnDone = context.AfterFunc(ctx, func() { s.Close() })
	s.mu.Unlock()

	go func() {
		defer close(s.serveDone)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("fake model server stopped", zap.Error(err))
		}
	}()
	return s.url, nil
}

// clone deep-copies sc through JSON, so a caller that reuses its Scenario
// cannot change a running server. A scenario that does not marshal (raw
// JSON that is not JSON) is invalid anyway and is kept as given.
func (sc Scenario) clone() Scenario {
	data, err := json.Marshal(sc)
	if err != nil {
		return sc
	}
	var c Scenario
	if err := json.Unmarshal(data, &c); err != nil {
		return sc
	}
	return c
}

// checkLoopbackAddr refuses host parts that are neither "localhost" nor a
// loopback IP; Start checks the bound address again after listening.
func checkLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("fake model server: address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNonLoopback, addr)
}

// URL is the base URL Start returned, or "" before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops the server: held, slow and hanging answers end at once, open
// connections are closed, and Close returns when every handler has
// returned. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	srv, serveDone, stop := s.httpServer, s.serveDone, s.stopOnDone
	s.mu.Unlock()

	if stop != nil {
		stop()
	}
	var err error
	if srv != nil {
		err = srv.Close()
	}
	s.handlers.Wait()
	if serveDone != nil {
		<-serveDone
	}
	return err
}

// enter registers a running handler, unless the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	s.active.Add(1)
	return true
}

func (s *Server) leave() {
	s.active.Add(-1)
	s.handlers.Done()
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// WaitForRequest returns the first logged request for which match holds,
// waiting for one to arrive until ctx is done. A nil match takes any request.
func (s *Server) WaitForRequest(ctx context.Context, match func(Request) bool) (Request, error) {
	for {
		s.mu.Lock()
		for _, r := range s.requests {
			if match == nil || match(r) {
				s.mu.Unlock()
				return r, nil
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("wait for request: %w", ctx.Err())
		}
	}
}

// Remaining is how many script steps have not been used up.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.scenario.Steps) - s.head
}

// notifyLocked wakes WaitForRequest callers; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
