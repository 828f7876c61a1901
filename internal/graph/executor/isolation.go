package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/gitcheck"
	"github.com/corral-dev/corral/internal/graph/store"
)

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
