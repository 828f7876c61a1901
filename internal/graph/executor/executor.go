package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/gitcheck"
	"github.com/corral-dev/corral/internal/graph/route"
	"github.com/corral-dev/corral/internal/graph/store"
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

// prepare makes an isolated subgoal's worktree and takes the git baseline
// of the folder the node works in. A folder outside git has no baseline:
// claims there go unchecked.
func (x *Executor) prepare(ctx context.Context, r *graph.Run, n *graph.Node) (*gitcheck.Baseline, string, error) {
	cwd, worktree := r.Cwd, ""
	if r.Policy.Isolated && n.Subgoal != "" {
		worktree = filepath.Join(x.store.Dir(r.ID), "worktrees", n.Subgoal)
		if err := gitcheck.AddWorktree(ctx, r.Cwd, worktree, branch(r.ID, n.Subgoal)); err != nil {
			return nil, "", err
		}
		cwd = worktree
	}
	base, err := gitcheck.Snapshot(ctx, cwd)
	switch {
	case errors.Is(err, gitcheck.ErrNotGit):
		return nil, worktree, nil
	case err != nil:
		return nil, "", err
	}
	return base, worktree, nil
}

// writeBaseline keeps the node's git baseline as evidence, for a submit
// from another process.
func (x *Executor) writeBaseline(run, node string, f *inflight) {
	if f.base == nil {
		return
	}
	raw, _ := json.Marshal(f.base)
	x.store.WriteEvidence(run, node, f.ticket.Nonce, store.BaselineFile, raw, false)
}

func branch(run, subgoal string) string { return "corral/" + run + "/" + subgoal }

// start builds the briefing and runs the node's first session.
func (x *Executor) start(ctx context.Context, r *graph.Run, node string, f *inflight) (graph.Verdict, error) {
	n := r.Node(node)
	base, worktree, err := x.prepare(ctx, r, n)
	if err != nil {
		return x.abandon(r.ID, node, f, fmt.Errorf("prepare %s: %w", node, err))
	}
	f.base, f.worktree = base, worktree
	x.writeBaseline(r.ID, node, f)
	extra := ""
	if n.Stage == graph.StageReport && r.Policy.Isolated && r.Policy.Merge {
		extra = x.mergeAccepted(ctx, r)
	}
	return x.session(ctx, r, node, f, extra, "")
}

// session runs one session of the node: create, send the briefing, wait.
func (x *Executor) session(ctx context.Context, r *graph.Run, node string, f *inflight, extra, retryNote string) (graph.Verdict, error) {
	n := r.Node(node)
	brief := graph.Brief(r, n, x.store.Results(r), f.worktree) + extra
	if retryNote != "" {
		brief = retryNote + "\n\n" + brief
	}
	x.store.WriteEvidence(r.ID, node, f.ticket.Nonce, store.BriefingFile, []byte(brief), false)
	sp := r.Policy.Stage(n.Stage)
	cwd := r.Cwd
	if f.worktree != "" {
		cwd = f.worktree
	}
	spec := wire.Spec{Engine: n.Route.Engine, Model: n.Route.Model, Cwd: cwd, Mode: n.Route.Mode, Scenario: n.Route.Scenario,
		ModelEndpoint: sp.ModelEndpoint, Unattended: sp.UnattendedFor(), SpendCapUSD: sp.SpendCapUSD}
	id, err := x.sessions.Create(ctx, spec)
	if err != nil {
		return x.abandon(r.ID, node, f, fmt.Errorf("start %s's session on %s: %w", node, spec.Engine, err))
	}
	f.tries++
	if _, err := x.store.Update(ctx, r.ID, func(r *graph.Run) error {
		return r.AddSession(node, f.ticket, id, x.store.Clock().Now())
	}); err != nil {
		x.stopSession(id)
		return x.superseded(r.ID, node, f, err)
	}
	if _, err := x.sessions.Command(ctx, id, wire.Command{Cmd: wire.CmdSend, Text: brief}); err != nil {
		x.stopSession(id)
		return x.abandon(r.ID, node, f, fmt.Errorf("send %s's briefing: %w", node, err))
	}
	f.session, f.from = id, 1
	return x.wait(ctx, r.ID, node, f)
}

// resume goes on waiting for a node whose session needed a person.
func (x *Executor) resume(ctx context.Context, run, node string, f *inflight) (graph.Verdict, error) {
	return x.wait(ctx, run, node, f)
}

// wait follows the node's session until its turn ends (then judges the
// result) or a person is needed (then returns, keeping the claim).
func (x *Executor) wait(ctx context.Context, run, node string, f *inflight) (graph.Verdict, error) {
	w, err := Wait(ctx, x.sessions, f.session, f.from)
	if err != nil {
		if ctx.Err() != nil {
			x.stopSession(f.session)
			return x.abandon(run, node, f, ctx.Err())
		}
		x.stopSession(f.session)
		return x.abandon(run, node, f, fmt.Errorf("wait for %s's session %s: %w", node, f.session, err))
	}
	f.from = w.LastSeq + 1
	switch w.State {
	case NeedsHuman:
		x.mu.Lock()
		f.busy = false
		x.mu.Unlock()
		r, err := x.store.Load(run)
		if err != nil {
			return graph.Verdict{}, err
		}
		v := graph.VerdictOf(r.Node(node))
		v.NeedsHuman, v.Session = true, f.session
		v.Reason = describeHuman(w)
		return v, nil
	case Idle:
		return x.finish(ctx, run, node, f, graph.NodeOutcome{Reason: "the session went idle without a turn"}, "")
	}
	if w.Outcome == "interrupted" {
		// The session's runner died (a crash, the supervisor killed): no
		// outcome of the node's; it may run again.
		return x.abandon(run, node, f, fmt.Errorf("%s's session %s was interrupted (its runner died); run the node again", node, f.session))
	}
	if w.Outcome != "done" {
		reason := fmt.Sprintf("the session's turn ended %s", w.Outcome)
		if w.Failure != nil {
			reason += fmt.Sprintf(": %s: %s", w.Failure.Code, w.Failure.Message)
		}
		return x.finish(ctx, run, node, f, graph.NodeOutcome{Reason: reason}, w.Text)
	}
	return x.judge(ctx, run, node, f, w.Text)
}

func describeHuman(w *WaitResult) string {
	var parts []string
	for _, a := range w.Asks {
		parts = append(parts, fmt.Sprintf("ask %s (%s %s%s)", a.AskID, a.Tool, a.Command, a.Path))
	}
	for _, e := range w.Edits {
		parts = append(parts, fmt.Sprintf("edit %s of %s (hunks %s)", e.EditID, e.Path, strings.Join(e.Hunks, ", ")))
	}
	return "waiting for a person: " + strings.Join(parts, "; ")
}

// judge reads and checks the result in a session's final answer.
func (x *Executor) judge(ctx context.Context, run, node string, f *inflight, text string) (graph.Verdict, error) {
	r, err := x.store.Load(run)
	if err != nil {
		return x.abandon(run, node, f, err)
	}
	n := r.Node(node)
	res, err := graph.ExtractResult(text)
	if err == nil {
		err = r.CheckResult(n, res)
	}
	if err != nil {
		count, merr := x.noteMalformed(ctx, run, node, f, err)
		if merr != nil {
			return x.superseded(run, node, f, merr)
		}
		if count < maxTries {
			note := fmt.Sprintf("Your previous answer to this briefing could not be used: %s. Answer again, from the start.", err.Error())
			return x.session(ctx, r, node, f, "", note)
		}
		return x.finish(ctx, run, node, f, graph.NodeOutcome{Reason: "malformed result twice: " + err.Error()}, text)
	}
	o := graph.NodeOutcome{StageOK: true, Result: res}
	if len(res.ChangedFiles) > 0 && f.base != nil {
		cwd := r.Cwd
		if f.worktree != "" {
			cwd = f.worktree
		}
		v, err := gitcheck.Verify(ctx, cwd, f.base, res.ChangedFiles)
		switch {
		case err != nil:
			return x.abandon(run, node, f, fmt.Errorf("check %s's changed files: %w", node, err))
		case len(v.False) > 0:
			o = graph.NodeOutcome{Reason: "false changed-file claims: " + strings.Join(v.False, "; "), Result: res}
		default:
			o.ChangedFiles = v.Confirmed
		}
	}
	return x.finish(ctx, run, node, f, o, text)
}

func (x *Executor) noteMalformed(ctx context.Context, run, node string, f *inflight, why error) (int, error) {
	var count int
	_, err := x.store.Update(ctx, run, func(r *graph.Run) error {
		var err error
		count, err = r.NoteMalformed(node, f.ticket, why.Error(), x.store.Clock().Now())
		return err
	})
	return count, err
}

// finish records the node's outcome under its ticket, with its result and
// raw text as evidence.
func (x *Executor) finish(ctx context.Context, run, node string, f *inflight, o graph.NodeOutcome, raw string) (graph.Verdict, error) {
	o.Evidence = f.ticket.Nonce
	if o.Result != nil {
		data, _ := json.MarshalIndent(o.Result, "", "  ")
		if err := x.store.WriteEvidence(run, node, o.Evidence, store.ResultFile, data, true); err != nil {
			return x.abandon(run, node, f, err)
		}
	}
	if raw != "" {
		x.store.WriteEvidence(run, node, o.Evidence, store.RawFile, []byte(raw), false)
	}
	var n *graph.Node
	r, err := x.store.Update(context.WithoutCancel(ctx), run, func(r *graph.Run) error {
		var err error
		n, err = r.Finish(node, f.ticket, o, x.store.Clock().Now())
		return err
	})
	if err != nil {
		if graph.CodeOf(err) == graph.CodeBadResult {
			return x.finish(ctx, run, node, f, graph.NodeOutcome{Reason: err.Error(), Result: o.Result}, raw)
		}
		return x.superseded(run, node, f, err)
	}
	if r.Policy.Isolated && n.Stage == graph.StageGate && n.State == graph.StatePassed && f.worktree != "" {
		// The accepted work is kept on the subgoal's branch.
		if _, err := gitcheck.CommitAll(ctx, f.worktree, fmt.Sprintf("corral %s: %s accepted by %s", run, n.Subgoal, node)); err != nil {
			x.log.Warn("commit an accepted subgoal", zap.String("run", run), zap.String("node", node), zap.Error(err))
		}
	}
	x.forget(run, node, f)
	return graph.VerdictOf(n), nil
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
	if _, err := x.sessions.Command(ctx, id, wire.Command{Cmd: wire.CmdStop}); err != nil && !errors.Is(err, wire.ErrNotFound) {
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

// mergeAccepted merges the branch of every accepted isolated subgoal into
// the run's worktree, in spec order, before the report runs, and returns
// what happened for the report's briefing. A branch that does not merge
// cleanly is left for a person.
func (x *Executor) mergeAccepted(ctx context.Context, r *graph.Run) string {
	if r.Spec == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Isolated subgoals merged back\n\n")
	for _, s := range r.Spec.Subgoals {
		br := branch(r.ID, s.ID)
		g := r.LiveGate(s.ID)
		switch {
		case g == nil || g.State != graph.StatePassed:
			fmt.Fprintf(&b, "- %s: not accepted; its work is left on branch %s\n", s.ID, br)
		default:
			if err := gitcheck.Merge(ctx, r.Cwd, br, fmt.Sprintf("corral %s: merge %s", r.ID, s.ID)); err != nil {
				fmt.Fprintf(&b, "- %s: not merged (%v); left on branch %s for a person\n", s.ID, oneLine(err.Error()), br)
				continue
			}
			fmt.Fprintf(&b, "- %s: merged from %s\n", s.ID, br)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
