package graph

import (
	"fmt"
	"slices"
	"time"
)

// Retry targets other than a subgoal id.
const (
	TargetSpec   = ""       // plan, setgoal, critique, or a goal gate's rejection
	TargetReport = "report" // a failed report
)

// RetryOutcome is what a retry did: the nodes it created, or, when the
// budget was gone, the node whose failure became final and the nodes that
// became unreachable.
type RetryOutcome struct {
	Target  string   `json:"target"`
	Created []string `json:"created,omitempty"`
	// Settled is the node whose failure became final (the budget was
	// gone); Unreachable the nodes that needed it through deps edges.
	Settled     string   `json:"settled,omitempty"`
	Unreachable []string `json:"unreachable"`
	Attempt     int      `json:"attempt,omitempty"`
	Budget      int      `json:"budget"`
}

// Retry retries a target after a failure: a subgoal id (a new attempt of
// its implement → test → gate, or of the goal gate that blamed it), "" for
// the spec (setgoal and critique reopened with the critique's problems, or
// plan when it failed) or "report". When the target's attempts are used up
// the failure becomes final instead and the run settles.
func (r *Run) Retry(target string, now time.Time) (*RetryOutcome, error) {
	if r.State != RunOpen {
		return nil, Errorf(CodeRunEnded, "run %s is %s", r.ID, r.State)
	}
	switch target {
	case TargetSpec, budgetSpec:
		return r.retrySpec(now)
	case TargetReport:
		return r.retryReport(now)
	}
	return r.retrySubgoal(target, now)
}

// failing returns the first live node among ns that failed or was rejected
// and is not final; a running one is an error.
func failing(ns []*Node) (*Node, error) {
	for _, n := range ns {
		if n == nil || !n.Live() {
			continue
		}
		if n.State == StateRunning {
			return nil, nodeErrorf(CodeNodeRunning, n.ID, "node %s is running; retry once it has finished", n.ID)
		}
	}
	for _, n := range ns {
		if n != nil && n.Live() && (n.State == StateFailed || n.State == StateRejected) && !n.Final {
			return n, nil
		}
	}
	return nil, nil
}

func (r *Run) retrySubgoal(id string, now time.Time) (*RetryOutcome, error) {
	s, ok := r.subgoal(id)
	if !ok {
		return nil, Errorf(CodeUnknownNode, "run %s has no subgoal %q in its live spec", r.ID, id)
	}
	attempt := []*Node{r.liveNode(StageImplement, id), r.liveNode(StageTest, id), r.liveNode(StageGate, id)}
	bad, err := failing(attempt)
	if err != nil {
		return nil, err
	}
	goal := r.liveNode(StageGoalGate, "")
	viaGoal := false
	if bad == nil && goal != nil && goal.State == StateRejected && !goal.Final && goal.Findings != nil && slices.Contains(goal.Findings.Blame, id) {
		bad, viaGoal = goal, true
	}
	if bad == nil {
		return nil, Errorf(CodeNothingRetry, "subgoal %s has no failure to retry", id)
	}
	out := &RetryOutcome{Target: id, Budget: r.Policy.Attempts(), Unreachable: []string{}}
	if r.Budgets[id] >= r.Policy.Attempts() {
		r.settle(bad, out, now)
		return out, nil
	}
	r.Budgets[id]++
	out.Attempt = r.Budgets[id]
	fb := feedbackOf(bad)
	oldGate := r.liveNode(StageGate, id)
	for _, n := range attempt {
		r.retire(n)
	}
	impl := r.add(&Node{Stage: StageImplement, Subgoal: id, Attempt: 1, Feedback: &fb})
	if c := r.liveNode(StageCritique, ""); c != nil {
		impl.Deps = append(impl.Deps, c.ID)
	}
	for _, d := range s.Deps {
		if g := r.LiveGate(d); g != nil {
			impl.Deps = append(impl.Deps, g.ID)
		}
	}
	for _, a := range s.After {
		if g := r.LiveGate(a); g != nil {
			impl.After = append(impl.After, g.ID)
		}
	}
	test := r.add(&Node{Stage: StageTest, Subgoal: id, Attempt: 1, Deps: []string{impl.ID}, Feedback: &fb})
	gate := r.add(&Node{Stage: StageGate, Subgoal: id, Attempt: 1, Deps: []string{test.ID}, Feedback: &fb})
	out.Created = []string{impl.ID, test.ID, gate.ID}
	if oldGate != nil {
		r.rewire(oldGate.ID, gate.ID)
	}
	if viaGoal {
		r.retire(goal)
		g2 := r.add(&Node{Stage: StageGoalGate, Attempt: 1, Deps: r.liveGates(), Feedback: &fb})
		r.rewire(goal.ID, g2.ID)
		out.Created = append(out.Created, g2.ID)
	}
	r.Emit(EvRetried, bad.ID, out)
	return out, nil
}

// feedbackOf is what a failed node hands the attempt that replaces it.
func feedbackOf(n *Node) Feedback {
	if n.Findings == nil {
		return Feedback{From: n.ID, Reason: n.Reason}
	}
	fb := *n.Findings
	if fb.Reason == "" {
		fb.Reason = n.Reason
	}
	return fb
}

// liveGates lists the live gate of every subgoal of the live spec.
func (r *Run) liveGates() []string {
	var out []string
	if r.Spec == nil {
		return out
	}
	for _, s := range r.Spec.Subgoals {
		if g := r.LiveGate(s.ID); g != nil {
			out = append(out, g.ID)
		}
	}
	return out
}

func (r *Run) retrySpec(now time.Time) (*RetryOutcome, error) {
	plan, set, crit := r.liveNode(StagePlan, ""), r.liveNode(StageSetGoal, ""), r.liveNode(StageCritique, "")
	bad, err := failing([]*Node{plan, set, crit})
	if err != nil {
		return nil, err
	}
	if bad == nil {
		if g := r.liveNode(StageGoalGate, ""); g != nil && g.State == StateRejected && !g.Final {
			bad = g
		}
	}
	if bad == nil {
		return nil, Errorf(CodeNothingRetry, "neither plan, setgoal, critique nor the goal gate has a failure to retry")
	}
	out := &RetryOutcome{Target: budgetSpec, Budget: r.Policy.Attempts(), Unreachable: []string{}}
	if r.Budgets[budgetSpec] >= r.Policy.Attempts() {
		r.settle(bad, out, now)
		return out, nil
	}
	// Nothing of the spec being retired may still be running.
	for _, n := range r.Nodes {
		if n.State == StateRunning && n.SpecVersion == r.SpecVersion && r.SpecVersion > 0 && n.Subgoal != "" {
			return nil, nodeErrorf(CodeNodeRunning, n.ID, "node %s of the spec being retried is running; retry once it has finished", n.ID)
		}
	}
	r.Budgets[budgetSpec]++
	out.Attempt = r.Budgets[budgetSpec]
	fb := feedbackOf(bad)
	// The graph the rejected spec produced is retired.
	if r.SpecVersion > 0 {
		for _, n := range r.Nodes {
			if n.SpecVersion == r.SpecVersion && (n.Subgoal != "" || n.Stage == StageGoalGate || n.Stage == StageReport) {
				r.retire(n)
			}
		}
		r.Spec = nil
	}
	planID := ""
	if plan != nil {
		planID = plan.ID
	}
	if bad == plan {
		r.retire(plan)
		p2 := r.add(&Node{Stage: StagePlan, Attempt: 1, Feedback: &fb})
		planID = p2.ID
		out.Created = append(out.Created, p2.ID)
	}
	r.retire(set)
	r.retire(crit)
	s2 := r.add(&Node{Stage: StageSetGoal, Attempt: 1, Deps: []string{planID}, Feedback: &fb})
	c2 := r.add(&Node{Stage: StageCritique, Attempt: 1, Deps: []string{s2.ID}, Feedback: &fb})
	out.Created = append(out.Created, s2.ID, c2.ID)
	r.Emit(EvRetried, bad.ID, out)
	return out, nil
}

func (r *Run) retryReport(now time.Time) (*RetryOutcome, error) {
	rep := r.liveNode(StageReport, "")
	bad, err := failing([]*Node{rep})
	if err != nil {
		return nil, err
	}
	if bad == nil {
		return nil, Errorf(CodeNothingRetry, "the report has no failure to retry")
	}
	out := &RetryOutcome{Target: budgetReport, Budget: r.Policy.Attempts(), Unreachable: []string{}}
	if r.Budgets[budgetReport] >= r.Policy.Attempts() {
		r.settle(bad, out, now)
		return out, nil
	}
	r.Budgets[budgetReport]++
	out.Attempt = r.Budgets[budgetReport]
	r.retire(rep)
	fb := feedbackOf(rep)
	n := r.add(&Node{Stage: StageReport, Attempt: 1, After: slices.Clone(rep.After), Deps: slices.Clone(rep.Deps), Feedback: &fb})
	out.Created = []string{n.ID}
	r.Emit(EvRetried, bad.ID, out)
	return out, nil
}

// retire takes a node out of the live graph: one that had not run is
// skipped, one that had finished stays as evidence.
func (r *Run) retire(n *Node) {
	switch {
	case n == nil:
	case n.State == StatePending:
		n.State, n.Reason = StateSkipped, "retired by a retry"
	case n.State.Finished():
		n.Retired = true
	}
}

// rewire points every live pending node's edges at from to to instead.
func (r *Run) rewire(from, to string) {
	for _, n := range r.Nodes {
		if n.State != StatePending || !n.Live() || n.ID == to {
			continue
		}
		for i, d := range n.Deps {
			if d == from {
				n.Deps[i] = to
			}
		}
		for i, a := range n.After {
			if a == from {
				n.After[i] = to
			}
		}
	}
}

// settle makes dead's failure final: every live pending node that needs it
// through deps edges, transitively, becomes unreachable with the reason;
// after edges do not carry it. A spec chain that fails for good with no
// spec ever produced blocks the run.
func (r *Run) settle(dead *Node, out *RetryOutcome, now time.Time) {
	dead.Final = true
	out.Settled = dead.ID
	cause := fmt.Sprintf("needs %s, which %s for good: %s", dead.ID, failedWord(dead), clip(dead.Reason, 300))
	gone := map[string]bool{dead.ID: true}
	for changed := true; changed; {
		changed = false
		for _, n := range r.Nodes {
			if n.State != StatePending || !n.Live() {
				continue
			}
			for _, d := range n.Deps {
				if gone[d] {
					n.State, n.Reason, n.FinishedAt = StateUnreachable, cause, now
					gone[n.ID] = true
					out.Unreachable = append(out.Unreachable, n.ID)
					changed = true
					break
				}
			}
		}
	}
	r.Emit(EvSettled, dead.ID, map[string]any{"unreachable": out.Unreachable, "reason": clip(dead.Reason, 300)})
	specChain := dead.Stage == StagePlan || dead.Stage == StageSetGoal || dead.Stage == StageCritique
	switch {
	case specChain && r.SpecVersion == 0:
		r.State = RunBlocked
		r.Outcome = &Account{Shipped: []string{}, NotShipped: []Missing{}, Reason: "no spec was ever produced: " + cause}
		r.Emit(EvRunBlocked, dead.ID, map[string]any{"reason": r.Outcome.Reason})
		return
	case specChain && r.liveNode(StageReport, "") == nil:
		// An earlier spec was retired and no new one came: the run
		// still gets its account.
		rep := r.add(&Node{Stage: StageReport, Attempt: 1, After: []string{dead.ID}})
		r.Budgets[budgetReport] = 1
		out.Created = append(out.Created, rep.ID)
	}
	r.updateState(now)
}

func failedWord(n *Node) string {
	if n.State == StateRejected {
		return "was rejected"
	}
	return "failed"
}

// updateState ends the run once its live report has settled, writing
// Corral's own account of what shipped and what did not.
func (r *Run) updateState(now time.Time) {
	if r.State != RunOpen {
		return
	}
	rep := r.liveNode(StageReport, "")
	if rep == nil || !rep.Settled() {
		return
	}
	r.State = RunComplete
	r.Outcome = r.Account()
	r.UpdatedAt = now
	r.Emit(EvRunComplete, rep.ID, r.Outcome)
}

// Account is what has shipped and what has not, as the run stands: a
// subgoal ships when its live gate passed.
func (r *Run) Account() *Account {
	o := &Account{Shipped: []string{}, NotShipped: []Missing{}}
	if r.Spec != nil {
		for _, s := range r.Spec.Subgoals {
			g := r.LiveGate(s.ID)
			if g != nil && g.State == StatePassed {
				o.Shipped = append(o.Shipped, s.ID)
				continue
			}
			m := Missing{Subgoal: s.ID, State: StatePending, Reason: "not run"}
			for _, st := range []Stage{StageImplement, StageTest, StageGate} {
				n := r.liveNode(st, s.ID)
				if n == nil || n.State == StatePassed {
					continue
				}
				m.State, m.Reason = n.State, fmt.Sprintf("%s %s", n.ID, n.State)
				if n.Reason != "" {
					m.Reason += ": " + clip(n.Reason, 300)
				}
				break
			}
			o.NotShipped = append(o.NotShipped, m)
		}
	} else {
		o.Reason = "no live spec"
	}
	if g := r.liveNode(StageGoalGate, ""); g != nil {
		switch {
		case g.State.Finished():
			o.Goal = g.Verdict
		default:
			o.Goal = string(g.State)
		}
	}
	if rep := r.liveNode(StageReport, ""); rep != nil && rep.State == StatePassed {
		o.Report = rep.ID
	}
	return o
}
