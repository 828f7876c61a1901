// Package service is the graph operations — open, next, run, submit,
// retry, status — over a store and an executor: one typed request and
// reply each (package graphapi). The supervisor's /v1/graphs routes, the
// CLI and the MCP server all call it.
package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/executor"
	"github.com/corral-dev/corral/internal/graph/graphapi"
	"github.com/corral-dev/corral/internal/graph/route"
	"github.com/corral-dev/corral/internal/graph/store"
	"go.uber.org/zap"
)

// Service runs graph operations. It is safe for concurrent use.
type Service struct {
	store  *store.Store
	exec   *executor.Executor
	router *route.Router
	// cwd is the default worktree of a run opened without one.
	cwd string
}

// Config builds a Service.
type Config struct {
	// State is the state folder; runs live in <state>/graphs.
	State string
	// Sessions reach the supervisor that runs nodes' sessions.
	Sessions executor.Sessions
	// Probe, when set, probes engine auto's candidates with a short
	// session each; else candidates are taken as ready.
	Probe bool
	// Cwd is the default worktree (default: the working directory).
	Cwd    string
	Store  store.Options
	Logger *zap.Logger
}

// New returns a service over the state folder's graph store.
func New(cfg Config) (*Service, error) {
	st, err := store.ForState(cfg.State, cfg.Store)
	if err != nil {
		return nil, err
	}
	var prober route.Prober
	if cfg.Probe {
		prober = executor.Prober{Sessions: cfg.Sessions}
	}
	rt := route.New(prober, 0, nil)
	cwd := cfg.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	return &Service{store: st, exec: executor.New(st, cfg.Sessions, rt, cfg.Logger), router: rt, cwd: cwd}, nil
}

// Store is the service's store.
func (s *Service) Store() *store.Store { return s.store }

// Open opens a run.
func (s *Service) Open(ctx context.Context, req graphapi.OpenRequest) (*graphapi.OpenReply, error) {
	if req.RunID == "" {
		req.RunID = newRunID()
	}
	if req.Cwd == "" {
		req.Cwd = s.cwd
	}
	if !filepath.IsAbs(req.Cwd) {
		return nil, graph.Errorf(graph.CodeBadRequest, "cwd %q: want an absolute path", req.Cwd)
	}
	if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
		return nil, graph.Errorf(graph.CodeBadRequest, "cwd %s: not a folder", req.Cwd)
	}
	r, err := graph.New(graph.OpenOptions{ID: req.RunID, Request: req.Request, Cwd: filepath.Clean(req.Cwd), Policy: req.Policy, Now: s.store.Clock().Now()})
	if err != nil {
		return nil, err
	}
	if err := s.store.Create(ctx, r); err != nil {
		return nil, err
	}
	return &graphapi.OpenReply{RunID: r.ID, State: r.State, Ready: s.ready(r)}, nil
}

func newRunID() string {
	var b [6]byte
	rand.Read(b[:])
	return "g" + hex.EncodeToString(b[:])
}

// ready lists a run's ready nodes with a preview of their routing.
func (s *Service) ready(r *graph.Run) []graphapi.NextNode {
	out := []graphapi.NextNode{}
	for _, n := range r.ReadyNodes() {
		out = append(out, graphapi.NextNode{Node: n.ID, Stage: n.Stage, Subgoal: n.Subgoal, Route: s.router.Preview(r, n)})
	}
	return out
}

// Next lists the nodes that may run now and how each would be routed,
// what runs, and what is blocked on a failure (with the retry that moves
// it on).
func (s *Service) Next(_ context.Context, req graphapi.RunRef) (*graphapi.NextReply, error) {
	r, err := s.store.Load(req.RunID)
	if err != nil {
		return nil, err
	}
	st := graph.StatusOf(r, s.store.Clock().Now())
	return &graphapi.NextReply{RunID: r.ID, State: r.State, Ready: s.ready(r), Running: st.Now, Blocked: st.Blocked}, nil
}

// Run runs one node to its verdict.
func (s *Service) Run(ctx context.Context, req graphapi.NodeRef) (*graph.Verdict, error) {
	if req.Node == "" {
		return nil, graph.Errorf(graph.CodeBadRequest, "which node? (node is empty)")
	}
	v, err := s.exec.Run(ctx, req.RunID, req.Node)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Submit records the result of a node the caller ran.
func (s *Service) Submit(ctx context.Context, req graphapi.SubmitRequest) (*graph.Verdict, error) {
	if len(req.Result) == 0 {
		return nil, graph.Errorf(graph.CodeBadRequest, "submit needs a result object")
	}
	v, err := s.exec.Submit(ctx, req.RunID, req.Node, req.Claim, req.Result)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Retry retries a failure, or settles it when the budget is gone.
func (s *Service) Retry(ctx context.Context, req graphapi.RetryRequest) (*graphapi.RetryReply, error) {
	var out *graph.RetryOutcome
	r, err := s.store.Update(ctx, req.RunID, func(r *graph.Run) error {
		var err error
		out, err = r.Retry(req.Subgoal, s.store.Clock().Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	return &graphapi.RetryReply{RetryOutcome: *out, State: r.State, Ready: s.ready(r)}, nil
}

// Status shows one run, or every run with what runs now and what
// finished last.
func (s *Service) Status(_ context.Context, req graphapi.StatusRequest) (*graphapi.StatusReply, error) {
	now := s.store.Clock().Now()
	if req.RunID != "" {
		r, err := s.store.Load(req.RunID)
		if err != nil {
			return nil, err
		}
		return &graphapi.StatusReply{Run: graph.StatusOf(r, now)}, nil
	}
	runs, err := s.store.List()
	if err != nil {
		return nil, err
	}
	out := &graphapi.StatusReply{Runs: []graph.Summary{}}
	for _, r := range runs {
		out.Runs = append(out.Runs, graph.SummaryOf(r, now))
	}
	return out, nil
}
