package graph

import (
	"fmt"
	"strings"
	"time"
)

// Verdict is the compact account of a node a caller gets: enough to decide
// what to do next, never the node's whole result (that stays in the run).
type Verdict struct {
	NodeID  string    `json:"nodeId"`
	Stage   Stage     `json:"stage"`
	Engine  string    `json:"engine,omitempty"`
	Model   string    `json:"model,omitempty"`
	State   NodeState `json:"state"`
	StageOK bool      `json:"stageOk"`
	Verdict string    `json:"verdict,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	// Superseded is set when the caller's result or interruption arrived
	// under a ticket that no longer held the node.
	Superseded bool `json:"superseded,omitempty"`
	// NeedsHuman is set when the node's session waits for a person (an
	// ask, a hunk to review); Session names it.
	NeedsHuman bool   `json:"needsHuman,omitempty"`
	Session    string `json:"session,omitempty"`
	// Claim is the claim token of a node routed to self: submit with it.
	Claim string `json:"claim,omitempty"`
	// Briefing is the briefing of a node routed to self.
	Briefing string `json:"briefing,omitempty"`
}

// Line is the verdict in one line (and, for a node routed to self, the
// briefing after it): what a caller reads.
func (v Verdict) Line() string {
	engine := v.Engine
	if v.Model != "" {
		engine += "/" + v.Model
	}
	switch {
	case v.Claim != "":
		return fmt.Sprintf("%s routed to self (claim %s): do what the briefing says, then submit the result with this claim.\n\n%s", v.NodeID, v.Claim, Printable(v.Briefing))
	case v.NeedsHuman:
		return fmt.Sprintf("%s running · %s · session %s %s", v.NodeID, engine, v.Session, v.Reason)
	}
	parts := []string{v.NodeID + " " + string(v.State)}
	if v.Verdict != "" {
		parts = append(parts, v.Verdict)
	}
	if !v.StageOK && v.State.Finished() {
		parts = append(parts, "stage failed")
	}
	if engine != "" {
		parts = append(parts, engine)
	}
	if v.Superseded {
		parts = append(parts, "superseded")
	}
	if v.Reason != "" {
		parts = append(parts, Printable(strings.Join(strings.Fields(v.Reason), " ")))
	}
	return strings.Join(parts, " · ")
}

// Printable replaces control characters (which an agent's text may hold,
// escape sequences among them) so text is safe to print on a terminal.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return '?'
		}
		return r
	}, s)
}

// VerdictOf is a node's compact verdict.
func VerdictOf(n *Node) Verdict {
	v := Verdict{NodeID: n.ID, Stage: n.Stage, State: n.State, StageOK: n.StageOK, Verdict: n.Verdict, Reason: clip(n.Reason, 500)}
	if n.Route != nil {
		v.Engine, v.Model = n.Route.Engine, n.Route.Model
	}
	return v
}

// Status is one run as graph_status shows it.
type RunStatus struct {
	ID        string    `json:"runId"`
	State     RunState  `json:"state"`
	Request   string    `json:"request"`
	Cwd       string    `json:"cwd"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Rev       int64     `json:"rev"`
	// Stages is the stage rail: per stage, how its live nodes stand.
	Stages []StageCount `json:"stages"`
	// Subgoals are the live spec's subgoals with their live nodes.
	Subgoals []SubgoalRow `json:"subgoals,omitempty"`
	Now      []Running    `json:"now"`
	Next     []string     `json:"next"`
	Blocked  []Blocked    `json:"blocked"`
	Last     *Verdict     `json:"last,omitempty"`
	Nodes    []NodeRow    `json:"nodes"`
	Outcome  *Account     `json:"outcome,omitempty"`
}

// StageCount counts a stage's live nodes by state.
type StageCount struct {
	Stage   Stage `json:"stage"`
	Total   int   `json:"total"`
	Done    int   `json:"done"` // passed
	Running int   `json:"running"`
	Bad     int   `json:"bad"` // rejected, failed or unreachable
}

// SubgoalRow is one subgoal: its live implement, test and gate.
type SubgoalRow struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Attempt   int      `json:"attempt"`
	Budget    int      `json:"budget"`
	Implement *NodeRef `json:"implement,omitempty"`
	Test      *NodeRef `json:"test,omitempty"`
	Gate      *NodeRef `json:"gate,omitempty"`
}

// NodeRef is a node's id and where it stands.
type NodeRef struct {
	ID      string    `json:"id"`
	State   NodeState `json:"state"`
	Verdict string    `json:"verdict,omitempty"`
}

// Running is a node being run now.
type Running struct {
	Node      string `json:"node"`
	Engine    string `json:"engine,omitempty"`
	Model     string `json:"model,omitempty"`
	ElapsedMS int64  `json:"elapsedMs"`
	Session   string `json:"session,omitempty"`
}

// Blocked is a live node that stops progress until something is done: a
// failure to retry (Retry names the target), or a node waiting on one.
type Blocked struct {
	Node   string    `json:"node"`
	State  NodeState `json:"state"`
	Reason string    `json:"reason"`
	// Retry is the graph_retry target that moves on ("" means the spec;
	// absent when no retry applies).
	Retry *string `json:"retry,omitempty"`
}

// NodeRow is one node in the Nodes list.
type NodeRow struct {
	Verdict
	Subgoal string   `json:"subgoal,omitempty"`
	Attempt int      `json:"attempt"`
	Deps    []string `json:"deps,omitempty"`
	After   []string `json:"after,omitempty"`
	Live    bool     `json:"live"`
	Final   bool     `json:"final,omitempty"`
	// Route is the routing decision and its reason.
	Route *Route `json:"route,omitempty"`
}

// StatusOf is a run's status at time now.
func StatusOf(r *Run, now time.Time) *RunStatus {
	st := &RunStatus{ID: r.ID, State: r.State, Request: clip(r.Request, 500), Cwd: r.Cwd, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, Rev: r.Rev, Now: []Running{}, Next: []string{}, Blocked: []Blocked{}, Nodes: make([]NodeRow, 0, len(r.Nodes)),
		Outcome: r.Outcome}
	counts := make(map[Stage]*StageCount, len(Stages))
	for _, s := range Stages {
		c := &StageCount{Stage: s}
		counts[s] = c
	}
	var last *Node
	for _, n := range r.Nodes {
		row := NodeRow{Verdict: VerdictOf(n), Subgoal: n.Subgoal, Attempt: n.Attempt, Deps: n.Deps, After: n.After, Live: n.Live(), Final: n.Final, Route: n.Route}
		st.Nodes = append(st.Nodes, row)
		if n.State.Finished() && (last == nil || n.FinishedAt.After(last.FinishedAt)) {
			last = n
		}
		if !n.Live() {
			continue
		}
		c := counts[n.Stage]
		c.Total++
		switch n.State {
		case StatePassed:
			c.Done++
		case StateRunning:
			c.Running++
			run := Running{Node: n.ID, ElapsedMS: now.Sub(n.StartedAt).Milliseconds()}
			if n.Route != nil {
				run.Engine, run.Model = n.Route.Engine, n.Route.Model
			}
			if k := len(n.Sessions); k > 0 {
				run.Session = n.Sessions[k-1]
			}
			st.Now = append(st.Now, run)
		case StateRejected, StateFailed, StateUnreachable:
			c.Bad++
		}
		if r.Ready(n) {
			st.Next = append(st.Next, n.ID)
		}
		if b, ok := r.blocked(n); ok {
			st.Blocked = append(st.Blocked, b)
		}
	}
	for _, s := range Stages {
		st.Stages = append(st.Stages, *counts[s])
	}
	if last != nil {
		v := VerdictOf(last)
		st.Last = &v
	}
	if r.Spec != nil {
		for _, s := range r.Spec.Subgoals {
			row := SubgoalRow{ID: s.ID, Title: s.Title, Attempt: r.Budgets[s.ID], Budget: r.Policy.Attempts()}
			row.Implement = ref(r.liveNode(StageImplement, s.ID))
			row.Test = ref(r.liveNode(StageTest, s.ID))
			row.Gate = ref(r.liveNode(StageGate, s.ID))
			st.Subgoals = append(st.Subgoals, row)
		}
	}
	return st
}

func ref(n *Node) *NodeRef {
	if n == nil {
		return nil
	}
	return &NodeRef{ID: n.ID, State: n.State, Verdict: n.Verdict}
}

// blocked says whether a live node holds the run up: a failure a retry
// must settle, with the retry target that does.
func (r *Run) blocked(n *Node) (Blocked, bool) {
	if r.State != RunOpen || (n.State != StateFailed && n.State != StateRejected) || n.Final {
		return Blocked{}, false
	}
	target := r.RetryTarget(n)
	return Blocked{Node: n.ID, State: n.State, Reason: clip(n.Reason, 300), Retry: &target}, true
}

// RetryTarget is the graph_retry target that retries a failed node.
func (r *Run) RetryTarget(n *Node) string {
	switch {
	case n.Subgoal != "":
		return n.Subgoal
	case n.Stage == StageReport:
		return TargetReport
	case n.Stage == StageGoalGate && n.Findings != nil && len(n.Findings.Blame) > 0:
		return n.Findings.Blame[0]
	}
	return TargetSpec
}

// Summary is one run as the list of every run shows it.
type Summary struct {
	ID        string    `json:"runId"`
	State     RunState  `json:"state"`
	Request   string    `json:"request"`
	UpdatedAt time.Time `json:"updatedAt"`
	Nodes     int       `json:"nodes"`
	Running   []Running `json:"running"`
	Last      *Verdict  `json:"last,omitempty"`
}

// SummaryOf is a run's line in the list of runs.
func SummaryOf(r *Run, now time.Time) Summary {
	s := Summary{ID: r.ID, State: r.State, Request: clip(r.Request, 120), UpdatedAt: r.UpdatedAt, Nodes: len(r.Nodes), Running: []Running{}}
	var last *Node
	for _, n := range r.Nodes {
		if n.State == StateRunning {
			run := Running{Node: n.ID, ElapsedMS: now.Sub(n.StartedAt).Milliseconds()}
			if n.Route != nil {
				run.Engine, run.Model = n.Route.Engine, n.Route.Model
			}
			s.Running = append(s.Running, run)
		}
		if n.State.Finished() && (last == nil || n.FinishedAt.After(last.FinishedAt)) {
			last = n
		}
	}
	if last != nil {
		v := VerdictOf(last)
		s.Last = &v
	}
	return s
}
