package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/gitcheck"
	"github.com/corral-dev/corral/internal/graph/route"
	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// Named limits of a node's run.
const (
	// maxTries is a node's sessions in one claim: the first, and one fresh
	// attempt after a malformed result.
	maxTries = 2
	// cleanupTimeout bounds stopping a session and releasing a claim after
	// the caller has gone.
	cleanupTimeout = 15 * time.Second
)

// Executor runs nodes. It is safe for concurrent use; a node being run by
// this executor is refused to a second caller, and a node whose session
// waits for a person is resumed by the next Run of it here.
type Executor struct {
	store    *store.Store
	sessions Sessions
	router   *route.Router
	log      *zap.Logger

	mu       sync.Mutex
	inflight map[string]*inflight // by run/node
}

// inflight is a node this process holds a claim on.
type inflight struct {
	ticket   graph.Ticket
	prior    graph.Node
	busy     bool
	session  string // the session waiting for a person
	from     int64  // where its wait goes on
	tries    int
	base     *gitcheck.Baseline
	worktree string
}

// New returns an executor over a store, a supervisor's sessions and a
// router.
func New(s *store.Store, sessions Sessions, r *route.Router, log *zap.Logger) *Executor {
	if log == nil {
		log = zap.NewNop()
	}
	return &Executor{store: s, sessions: sessions, router: r, log: log, inflight: map[string]*inflight{}}
}

// Store is the executor's store.
func (x *Executor) Store() *store.Store { return x.store }

// Router is the executor's router.
func (x *Executor) Router() *route.Router { return x.router }

func key(run, node string) string { return run + "/" + node }

// Run runs node of run to its verdict: it routes and claims the node, runs
// it in a session, and records its outcome. It returns with the node still
// running when the session waits for a person (Verdict.NeedsHuman), and
// with a claim token and the briefing when the node is routed to self.
func (x *Executor) Run(ctx context.Context, run, node string) (graph.Verdict, error) {
	k := key(run, node)
	x.mu.Lock()
	if f := x.inflight[k]; f != nil {
		if !f.busy && f.session == "" {
			// Routed to self before: the same briefing and token again.
			x.mu.Unlock()
			r, err := x.store.Load(run)
			if err != nil {
				return graph.Verdict{}, err
			}
			return x.selfVerdict(r, node, f), nil
		}
		if f.busy {
			x.mu.Unlock()
			return graph.Verdict{}, &graph.Error{Code: graph.CodeNodeRunning, Node: node, Message: fmt.Sprintf("node %s is being run by this process already", node)}
		}
		f.busy = true
		x.mu.Unlock()
		return x.resume(ctx, run, node, f)
	}
	x.mu.Unlock()

	r, err := x.store.Load(run)
	if err != nil {
		return graph.Verdict{}, err
	}
	if err := r.CanClaim(node); err != nil && graph.CodeOf(err) != graph.CodeNodeRunning {
		return graph.Verdict{}, err
	}
	var stale []string
	if n := r.Node(node); n.State == graph.StateRunning && len(n.Sessions) > 0 {
		// A claim about to be taken over: its claimer's session may
		// still be running in the supervisor.
		stale = n.Sessions[len(n.Sessions)-1:]
	}
	rt := x.router.Route(ctx, r, r.Node(node))
	proc := x.store.Process()
	tk := proc.NewTicket()
	var prior graph.Node
	r, err = x.store.Update(ctx, run, func(r *graph.Run) error {
		var err error
		prior, err = r.Claim(node, tk, rt, proc, x.store.Clock().Now())
		return err
	})
	if err != nil {
		proc.Drop(tk)
		return graph.Verdict{}, err
	}
	f := &inflight{ticket: tk, prior: prior, busy: true}
	x.mu.Lock()
	x.inflight[k] = f
	x.mu.Unlock()
	x.stopOld(stale)
	if rt.Engine == graph.Self {
		return x.selfRoute(ctx, r, node, f)
	}
	return x.start(ctx, r, node, f)
}

// selfRoute hands a node routed to self to the caller: its briefing and
// the claim token to submit with. This process keeps the ticket, so the
// claim holds while it lives.
func (x *Executor) selfRoute(ctx context.Context, r *graph.Run, node string, f *inflight) (graph.Verdict, error) {
	n := r.Node(node)
	base, worktree, err := x.prepare(ctx, r, n)
	if err != nil {
		return x.abandon(r.ID, node, f, err)
	}
	f.base, f.worktree = base, worktree
	x.writeBaseline(r.ID, node, f)
	brief := graph.Brief(r, n, x.store.Results(r), worktree)
	x.store.WriteEvidence(r.ID, node, f.ticket.Nonce, store.BriefingFile, []byte(brief), false)
	x.mu.Lock()
	f.busy = false
	x.mu.Unlock()
	return x.selfVerdict(r, node, f), nil
}

// selfVerdict is the verdict of a node routed to self: its claim token and
// briefing.
func (x *Executor) selfVerdict(r *graph.Run, node string, f *inflight) graph.Verdict {
	n := r.Node(node)
	v := graph.VerdictOf(n)
	brief, _ := x.store.ReadEvidence(r.ID, node, f.ticket.Nonce, store.BriefingFile)
	v.Claim, v.Briefing = f.ticket.Nonce, string(brief)
	if n.Route != nil {
		v.Reason = n.Route.Reason
	}
	return v
}

// superseded handles a change refused because the ticket no longer holds
// the node: the refusal was recorded; the caller gets the node as it is.
func (x *Executor) superseded(run, node string, f *inflight, err error) (graph.Verdict, error) {
	x.forget(run, node, f)
	if graph.CodeOf(err) != graph.CodeSuperseded {
		return graph.Verdict{}, err
	}
	r, lerr := x.store.Load(run)
	if lerr != nil {
		return graph.Verdict{}, err
	}
	v := graph.VerdictOf(r.Node(node))
	v.Superseded = true
	v.Reason = err.Error()
	return v, nil
}

// abandon releases the claim after a failure that is no outcome of the
// node (the caller left, a session could not start): the node goes back
// to pending with its earlier fields.
func (x *Executor) abandon(run, node string, f *inflight, cause error) (graph.Verdict, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, err := x.store.Update(ctx, run, func(r *graph.Run) error {
		return r.Release(node, f.ticket, f.prior, cause.Error(), x.store.Clock().Now())
	})
	x.forget(run, node, f)
	if err != nil && graph.CodeOf(err) != graph.CodeSuperseded {
		x.log.Warn("release a claim", zap.String("run", run), zap.String("node", node), zap.Error(err))
	}
	return graph.Verdict{}, cause
}

func (x *Executor) forget(run, node string, f *inflight) {
	x.mu.Lock()
	if x.inflight[key(run, node)] == f {
		delete(x.inflight, key(run, node))
	}
	x.mu.Unlock()
	x.store.Process().Drop(f.ticket)
}

// stopSession stops a session's turn, whatever the caller's context.
func (x *Executor) stopSession(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := x.sessions.Command(ctx, id, command.Stop{}); err != nil && !errors.Is(err, wire.ErrNotFound) {
		x.log.Debug("stop a node's session", zap.String("session", id), zap.Error(err))
	}
}

// stopOld stops the sessions of a claim that was taken over: a dead
// claimer's session may still be running in the supervisor.
func (x *Executor) stopOld(sessions []string) {
	for _, id := range sessions {
		x.stopSession(id)
	}
}
