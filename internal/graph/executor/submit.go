package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/gitcheck"
	"github.com/corral-dev/corral/internal/graph/store"
)

// Submit records the result of a node the caller ran itself (routed to
// self), judged as a session's would be: checked against its stage, its
// changed-file claims checked against git. claim is the token graph_run
// gave; without one, a pending node whose edges hold is claimed for the
// caller in the same step. A malformed result is refused once (the node
// stays claimed; submit again) and fails the node the second time, the
// raw text kept as evidence.
func (x *Executor) Submit(ctx context.Context, run, node, claim string, raw json.RawMessage) (graph.Verdict, error) {
	r, err := x.store.Load(run)
	if err != nil {
		return graph.Verdict{}, err
	}
	n := r.Node(node)
	if n == nil {
		return graph.Verdict{}, &graph.Error{Code: graph.CodeUnknownNode, Node: node, Message: fmt.Sprintf("run %s has no node %q", run, node)}
	}
	proc := x.store.Process()
	var tk graph.Ticket
	var prior *graph.Node // set when this submit claimed the node itself
	switch {
	case claim != "":
		// The node's claim holds this nonce, or the submission is
		// recorded as superseded.
		tk = graph.Ticket{Nonce: claim}
		if n.Claim != nil && n.Claim.Ticket.Nonce == claim {
			tk = n.Claim.Ticket
		}
	case n.State == graph.StateRunning:
		return graph.Verdict{}, &graph.Error{Code: graph.CodeNodeRunning, Node: node,
			Message: fmt.Sprintf("node %s is running under a claim; submit with its claim token", node)}
	default:
		tk = proc.NewTicket()
		rt := &graph.Route{Engine: graph.Self, Reason: "submitted by the caller", At: x.store.Clock().Now()}
		if _, err := x.store.Update(ctx, run, func(r *graph.Run) error {
			p, err := r.Claim(node, tk, rt, proc, x.store.Clock().Now())
			prior = &p
			return err
		}); err != nil {
			proc.Drop(tk)
			return graph.Verdict{}, err
		}
		r, _ = x.store.Load(run)
		n = r.Node(node)
	}
	f := &inflight{ticket: tk}
	x.mu.Lock()
	if held := x.inflight[key(run, node)]; held != nil && held.ticket.Nonce == tk.Nonce {
		f = held // routed to self by this process
	}
	x.mu.Unlock()
	res, perr := parseSubmitted(raw)
	if perr == nil {
		perr = r.CheckResult(n, res)
	}
	if perr != nil {
		return x.malformed(ctx, run, node, f, perr, string(raw), func() (graph.Verdict, error) {
			if prior != nil {
				// The claim was this submit's own: the node goes back
				// to pending, the malformed result on its record.
				f.prior = *prior
				x.abandon(run, node, f, perr)
			}
			return graph.Verdict{}, perr
		})
	}
	o := graph.NodeOutcome{StageOK: true, Result: res}
	if len(res.ChangedFiles) > 0 {
		v, err := x.verifySubmitted(ctx, r, n, tk, res.ChangedFiles)
		switch {
		case err != nil:
			return graph.Verdict{}, err
		case v != nil && len(v.False) > 0:
			o = graph.NodeOutcome{Reason: "false changed-file claims: " + strings.Join(v.False, "; "), Result: res}
		case v != nil:
			o.ChangedFiles = v.Confirmed
		}
	}
	return x.finish(ctx, run, node, f, o, string(raw))
}

// parseSubmitted decodes a submitted result object.
func parseSubmitted(raw json.RawMessage) (*graph.Result, error) {
	if len(raw) > graph.MaxResult {
		return nil, graph.Errorf(graph.CodeBadResult, "the result is %d bytes; at most %d", len(raw), graph.MaxResult)
	}
	var res graph.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, graph.Errorf(graph.CodeBadResult, "the result is not a result object: %v", err)
	}
	return &res, nil
}

// verifySubmitted checks a submitted node's claims against the baseline
// taken when graph_run routed it to self, else against the worktree's
// state since the node was claimed.
func (x *Executor) verifySubmitted(ctx context.Context, r *graph.Run, n *graph.Node, tk graph.Ticket, claims []string) (*gitcheck.Verdict, error) {
	cwd := r.Cwd
	if r.Policy.Isolated && n.Subgoal != "" {
		cwd = x.store.Dir(r.ID) + "/worktrees/" + n.Subgoal
	}
	var base *gitcheck.Baseline
	if raw, err := x.store.ReadEvidence(r.ID, n.ID, tk.Nonce, store.BaselineFile); err == nil {
		base = &gitcheck.Baseline{}
		if json.Unmarshal(raw, base) != nil {
			base = nil
		}
	}
	if base == nil {
		b, err := gitcheck.Snapshot(ctx, cwd)
		if err != nil {
			return nil, nil // outside git: claims go unchecked
		}
		// No baseline from before the work: every change since HEAD
		// counts, and ignored files touched since the claim.
		b.Files = map[string]string{}
		b.Taken = n.StartedAt
		base = b
	}
	return gitcheck.Verify(ctx, cwd, base, claims)
}
