package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/gitcheck"
	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

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
	if _, err := x.sessions.Command(ctx, id, command.Send{Text: brief}); err != nil {
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
		return x.malformed(ctx, run, node, f, err, text, func() (graph.Verdict, error) {
			note := fmt.Sprintf("Your previous answer to this briefing could not be used: %s. Answer again, from the start.", err.Error())
			return x.session(ctx, r, node, f, "", note)
		})
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

// malformed records a malformed result: the first time, again decides
// what comes next (a fresh session, a refusal); the second fails the node
// with the raw text kept as evidence.
func (x *Executor) malformed(ctx context.Context, run, node string, f *inflight, why error, raw string, again func() (graph.Verdict, error)) (graph.Verdict, error) {
	count, err := x.noteMalformed(ctx, run, node, f, why)
	if err != nil {
		return x.superseded(run, node, f, err)
	}
	if count < maxTries {
		return again()
	}
	return x.finish(ctx, run, node, f, graph.NodeOutcome{Reason: "malformed result twice: " + why.Error()}, raw)
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
