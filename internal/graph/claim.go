package graph

import (
	"fmt"
	"slices"
	"time"
)

// Owners decides whether a claim's ticket still holds. The store's
// implementation knows this process's pid, boot and the tickets it holds.
type Owners interface {
	// Gone reports whether t no longer holds its claim, and why: its owner
	// is dead, it came from another boot, or it is this process's pid
	// and this process no longer holds that ticket.
	Gone(t Ticket) (bool, string)
}

// Claim claims node id for ticket t, routed as route says, and returns the
// node as it was before, for Release. It refuses a node that does not
// exist, has finished, waits on its edges, or that a live ticket holds; a
// claim whose ticket no longer holds is taken over (nodeReclaimed).
func (r *Run) Claim(id string, t Ticket, route *Route, owners Owners, now time.Time) (prior Node, err error) {
	n, err := r.runnable(id)
	if err != nil {
		return Node{}, err
	}
	if unmet := r.Unmet(n); len(unmet) > 0 {
		return Node{}, nodeErrorf(CodeDepsUnmet, id, "node %s waits for %s", id, joinList(unmet))
	}
	if n.State == StateRunning {
		c := n.Claim
		if c != nil && c.Ticket.Nonce == t.Nonce {
			return Node{}, nodeErrorf(CodeNodeRunning, id, "node %s is already claimed by this ticket", id)
		}
		gone, why := true, "the claim has no ticket"
		if c != nil {
			gone, why = owners.Gone(c.Ticket)
		}
		if !gone {
			return Node{}, nodeErrorf(CodeNodeRunning, id, "node %s is running (claimed by pid %d at %s)", id, c.Ticket.PID, c.ClaimedAt.Format(time.RFC3339))
		}
		var from *Ticket
		if c != nil {
			from = &c.Ticket
		}
		r.Emit(EvNodeReclaimed, id, map[string]any{"from": from, "why": why})
		n.Reclaimed++
	}
	prior = n.clone()
	if prior.State == StateRunning {
		// A reclaimed node goes back to what it was before that claim.
		prior.State, prior.Claim = StatePending, nil
	}
	n.State = StateRunning
	n.Claim = &Claim{Ticket: t, ClaimedAt: now, Self: route != nil && route.Engine == Self}
	n.Route = route
	n.StartedAt = now
	data := map[string]any{"ticket": t}
	if route != nil {
		data["engine"], data["model"], data["reason"] = route.Engine, route.Model, route.Reason
	}
	r.Emit(EvNodeClaimed, id, data)
	return prior, nil
}

// CanClaim reports whether node id could be claimed now by a ticket that
// is not the one holding it: the refusal Claim would give, except that a
// running node is not checked for a dead owner.
func (r *Run) CanClaim(id string) error {
	n, err := r.runnable(id)
	if err != nil {
		return err
	}
	if unmet := r.Unmet(n); len(unmet) > 0 {
		return nodeErrorf(CodeDepsUnmet, id, "node %s waits for %s", id, joinList(unmet))
	}
	return nil
}

// runnable finds a node that may still run: it exists, in an open run, and
// has not finished or been retired.
func (r *Run) runnable(id string) (*Node, error) {
	if r.State != RunOpen {
		return nil, Errorf(CodeRunEnded, "run %s is %s", r.ID, r.State)
	}
	n := r.Node(id)
	if n == nil {
		return nil, nodeErrorf(CodeUnknownNode, id, "run %s has no node %q", r.ID, id)
	}
	switch {
	case n.State.Finished():
		return nil, nodeErrorf(CodeNodeFinished, id, "node %s has finished (%s)", id, describeState(n))
	case n.State == StateSkipped, n.State == StateUnreachable:
		return nil, nodeErrorf(CodeNodeFinished, id, "node %s is %s: %s", id, n.State, n.Reason)
	}
	return n, nil
}

// held returns node id when ticket t holds it, else records what arrived
// (a result or an interruption) as superseded and returns the superseded
// error.
func (r *Run) held(id string, t Ticket, what, note string, now time.Time) (*Node, error) {
	n := r.Node(id)
	if n == nil {
		return nil, nodeErrorf(CodeUnknownNode, id, "run %s has no node %q", r.ID, id)
	}
	if n.State == StateRunning && n.Claim != nil && n.Claim.Ticket.Nonce == t.Nonce {
		return n, nil
	}
	n.Superseded = append(n.Superseded, Superseded{Ticket: t, At: now, What: what, Note: clip(note, 300)})
	r.Emit(EvResultSuperseded, id, map[string]any{"ticket": t, "what": what, "note": clip(note, 300)})
	return nil, nodeErrorf(CodeSuperseded, id, "the %s for node %s arrived under a ticket that no longer holds it (node %s); recorded as resultSuperseded", what, id, n.State)
}

// Release undoes a claim after a failure that is no node outcome (the
// caller gave up, a session could not start): the node goes back to
// pending with its fields as they were before the claim. A ticket that no
// longer holds records the interruption as superseded.
func (r *Run) Release(id string, t Ticket, prior Node, why string, now time.Time) error {
	n, err := r.held(id, t, "interruption", why, now)
	if err != nil {
		return err
	}
	superseded, malformed, reclaimed := n.Superseded, n.Malformed, n.Reclaimed
	*n = prior.clone()
	// What happened under the claim stays on the record.
	n.Superseded, n.Malformed, n.Reclaimed = superseded, malformed, reclaimed
	r.Emit(EvNodeReleased, id, map[string]any{"why": clip(why, 300)})
	return nil
}

// AddSession records a session started for the node under ticket t.
func (r *Run) AddSession(id string, t Ticket, session string, now time.Time) error {
	n, err := r.held(id, t, "session", session, now)
	if err != nil {
		return err
	}
	n.Sessions = append(n.Sessions, session)
	r.Emit(EvNodeSession, id, map[string]any{"session": session})
	return nil
}

// NoteMalformed records a malformed result under ticket t and returns how
// many this claim has had.
func (r *Run) NoteMalformed(id string, t Ticket, why string, now time.Time) (int, error) {
	n, err := r.held(id, t, "result", "malformed: "+why, now)
	if err != nil {
		return 0, err
	}
	n.Malformed++
	r.Emit(EvNodeMalformed, id, map[string]any{"why": clip(why, 300), "count": n.Malformed})
	return n.Malformed, nil
}

// Outcome of a node's work, as the executor or a submitting caller found
// it.
type NodeOutcome struct {
	// StageOK is false when the stage itself failed: the engine failed,
	// the result was malformed twice, a claimed file did not change.
	StageOK bool
	// Reason says why the stage failed.
	Reason string
	// Result is the checked result when StageOK.
	Result *Result
	// ChangedFiles are the result's claims git confirmed.
	ChangedFiles []string
	// Evidence names where the store keeps this outcome's result and raw
	// text (a folder under the node's).
	Evidence string
}

// Finish applies a node's outcome under ticket t. A judging node that
// worked passes or is rejected by its verdict; a gate's accept over failed
// test checks is a rejection; a rejection without a reason gets one from
// its checks and evidence; setgoal's spec derives the per-subgoal nodes;
// report completes the run.
func (r *Run) Finish(id string, t Ticket, o NodeOutcome, now time.Time) (*Node, error) {
	n, err := r.held(id, t, "result", o.Reason+o.Result.describe(), now)
	if err != nil {
		return nil, err
	}
	if o.StageOK {
		if err := r.CheckResult(n, o.Result); err != nil {
			return nil, err
		}
	}
	n.Claim = nil
	n.FinishedAt = now
	n.Evidence = o.Evidence
	n.Reason, n.Verdict, n.Findings = "", "", nil
	res := o.Result
	switch {
	case !o.StageOK:
		n.State, n.StageOK, n.Verdict = StateFailed, false, VerdictFailed
		n.Reason = clip(o.Reason, 2000)
		n.Findings = findings(id, res, n.Reason)
	case n.Stage.Judging():
		n.StageOK, n.Verdict = true, res.Verdict
		if n.Stage == StageGate && positive(n.Stage, res.Verdict) {
			if failed := r.failedTestChecks(n); len(failed) > 0 {
				n.Verdict = VerdictReject
				res = withReason(res, "accept overridden: the subgoal's tests failed: "+joinList(failed))
			}
		}
		if positive(n.Stage, n.Verdict) {
			n.State, n.Reason = StatePassed, clip(res.Reason, 2000)
		} else {
			n.State, n.Reason = StateRejected, rejectionReason(res)
			n.Findings = findings(id, res, n.Reason)
		}
	default:
		n.State, n.StageOK, n.Verdict = StatePassed, true, doneVerdict[n.Stage]
		n.Reason = res.describe()
		if failed := failedChecks(res.Checks); len(failed) > 0 {
			// A test that ran and found failures worked as a stage; the
			// gate after it may not accept over them.
			n.Reason = fmt.Sprintf("%d of %d checks failed; %s", len(failed), len(res.Checks), n.Reason)
			n.Findings = findings(id, res, n.Reason)
		}
	}
	if n.State == StatePassed || n.State == StateRejected {
		n.ChangedFiles = slices.Clone(o.ChangedFiles)
	}
	r.Emit(EvNodeFinished, id, map[string]any{"state": n.State, "stageOk": n.StageOK, "verdict": n.Verdict, "reason": clip(n.Reason, 300)})
	if n.Stage == StageSetGoal && n.State == StatePassed {
		r.derive(n, res.Subgoals)
	}
	r.updateState(now)
	return n, nil
}

// failedTestChecks lists the failed checks of the test node a gate judges,
// as recorded in its findings or reason.
func (r *Run) failedTestChecks(gate *Node) []string {
	var out []string
	for _, id := range gate.Deps {
		d := r.Node(id)
		if d == nil || d.Stage != StageTest || d.Findings == nil {
			continue
		}
		for _, c := range d.Findings.Failed {
			out = append(out, c.Name)
		}
	}
	return out
}

func withReason(res *Result, reason string) *Result {
	cp := *res
	cp.Reason = reason
	return &cp
}

func joinList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

// clone copies a node deeply enough that later changes to one do not show
// in the other.
func (n *Node) clone() Node {
	c := *n
	c.Deps = slices.Clone(n.Deps)
	c.After = slices.Clone(n.After)
	c.Sessions = slices.Clone(n.Sessions)
	c.ChangedFiles = slices.Clone(n.ChangedFiles)
	c.Superseded = slices.Clone(n.Superseded)
	if n.Claim != nil {
		cl := *n.Claim
		c.Claim = &cl
	}
	if n.Route != nil {
		rt := *n.Route
		rt.Probes = slices.Clone(n.Route.Probes)
		c.Route = &rt
	}
	return c
}

// String names a ticket for people.
func (t Ticket) String() string {
	return fmt.Sprintf("pid %d (boot %.8s, nonce %.8s)", t.PID, t.Boot, t.Nonce)
}
