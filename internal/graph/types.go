package graph

import (
	"time"
)

// FormatVersion is the version of the run document the store writes. A
// reader refuses a newer one rather than misread it.
const FormatVersion = 1

// Stage is what a node does.
type Stage string

// The stages, in the order a run goes through them.
const (
	StagePlan      Stage = "plan"
	StageSetGoal   Stage = "setgoal"
	StageCritique  Stage = "critique"
	StageImplement Stage = "implement"
	StageTest      Stage = "test"
	StageGate      Stage = "gate"
	StageGoalGate  Stage = "gate:goal"
	StageReport    Stage = "report"
)

// Stages lists every stage in flow order.
var Stages = []Stage{StagePlan, StageSetGoal, StageCritique, StageImplement, StageTest, StageGate, StageGoalGate, StageReport}

// Judging reports whether the stage judges rather than does: its verdict
// can be negative while the stage itself worked (stageOk).
func (s Stage) Judging() bool {
	return s == StageCritique || s == StageGate || s == StageGoalGate
}

// Reasoning reports whether the stage only reads and thinks: it runs
// read-only unless its policy says otherwise.
func (s Stage) Reasoning() bool {
	return s != StageImplement && s != StageTest
}

// Verdicts: the positive and negative verdict of each judging stage, and
// the verdict of a stage that does.
const (
	VerdictSound       = "sound"
	VerdictUnsound     = "unsound"
	VerdictAccept      = "accept"
	VerdictReject      = "reject"
	VerdictVerified    = "verified"
	VerdictUnverified  = "unverified"
	VerdictPlanned     = "planned"
	VerdictSpecified   = "specified"
	VerdictImplemented = "implemented"
	VerdictTested      = "tested"
	VerdictReported    = "reported"
	VerdictFailed      = "failed" // the stage itself failed
)

// verdicts says, per judging stage, its positive and negative verdict.
var verdicts = map[Stage][2]string{
	StageCritique: {VerdictSound, VerdictUnsound},
	StageGate:     {VerdictAccept, VerdictReject},
	StageGoalGate: {VerdictVerified, VerdictUnverified},
}

// doneVerdict is the verdict of a stage that does, when it worked.
var doneVerdict = map[Stage]string{
	StagePlan:      VerdictPlanned,
	StageSetGoal:   VerdictSpecified,
	StageImplement: VerdictImplemented,
	StageTest:      VerdictTested,
	StageReport:    VerdictReported,
}

// State is where a node is.
type NodeState string

// Node states. A node is finished when passed, rejected or failed; terminal
// when it can never run again (finished, skipped or unreachable).
const (
	StatePending     NodeState = "pending"     // waiting for its edges, or ready
	StateRunning     NodeState = "running"     // claimed
	StatePassed      NodeState = "passed"      // finished: worked, and a judge's verdict was positive
	StateRejected    NodeState = "rejected"    // finished: a judge worked and said no
	StateFailed      NodeState = "failed"      // finished: the stage itself failed
	StateSkipped     NodeState = "skipped"     // retired by a retry before it ran
	StateUnreachable NodeState = "unreachable" // a deps ancestor failed for good
)

// states lists every node state.
var states = []NodeState{StatePending, StateRunning, StatePassed, StateRejected, StateFailed, StateSkipped, StateUnreachable}

// Finished reports whether the node ran to an outcome.
func (s NodeState) Finished() bool {
	return s == StatePassed || s == StateRejected || s == StateFailed
}

// RunState is where a run is.
type RunState string

// Run states.
const (
	RunOpen     RunState = "open"
	RunComplete RunState = "complete" // the report ran (or failed for good): the account is written
	RunBlocked  RunState = "blocked"  // no spec was ever produced
)

// Run is the document of one graph run, as the store keeps it in
// <state>/graphs/<id>/run.json. Every change goes through the store's one
// operation; the fields are exported for encoding only.
type Run struct {
	Version   int       `json:"version"`
	ID        string    `json:"id"`
	Request   string    `json:"request"`
	Cwd       string    `json:"cwd"`
	State     RunState  `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Rev counts the changes made to the run; every store operation adds
	// one.
	Rev int64 `json:"rev"`
	// EventSeq is the seq of the last graph event written.
	EventSeq int64 `json:"eventSeq"`
	// Tail holds the events of the last change, so that a change whose
	// events a crash kept out of events.jsonl gets them appended by the
	// next one, before its own: the feed has no gap.
	Tail   []RunEvent `json:"tail,omitempty"`
	Policy Policy     `json:"policy"`
	// Spec is the live spec: the last one setgoal produced that a spec
	// retry has not retired. SpecVersion counts specs produced.
	Spec        *Spec `json:"spec,omitempty"`
	SpecVersion int   `json:"specVersion,omitempty"`
	// Budgets counts the attempts used per retry target within the live
	// spec: a subgoal id, "spec" or "report".
	Budgets map[string]int `json:"budgets,omitempty"`
	Nodes   []*Node        `json:"nodes"`
	// Outcome is the account of a finished run, written by Corral when the
	// run ends, whatever the report node said.
	Outcome *Account `json:"outcome,omitempty"`

	index  map[string]*Node
	events []RunEvent // emitted by the change under way, for the store to append
}

// Node is one step of a run.
type Node struct {
	ID      string `json:"id"`
	Stage   Stage  `json:"stage"`
	Subgoal string `json:"subgoal,omitempty"`
	// Attempt numbers the tries of a node's role in the run (1, 2, …);
	// node ids of later attempts end in ":N".
	Attempt int `json:"attempt"`
	// SpecVersion is the spec the node belongs to (0 before any spec).
	SpecVersion int       `json:"specVersion,omitempty"`
	Deps        []string  `json:"deps,omitempty"`
	After       []string  `json:"after,omitempty"`
	State       NodeState `json:"state"`
	StageOK     bool      `json:"stageOk"`
	Verdict     string    `json:"verdict,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	// Final marks a failure settled for good: a retry found the budget
	// gone.
	Final bool `json:"final,omitempty"`
	// Retired marks a finished node a retry replaced; it stays as evidence.
	Retired bool `json:"retired,omitempty"`
	// Feedback is what the attempt this node belongs to must fix, carried
	// into its briefing.
	Feedback *Feedback `json:"feedback,omitempty"`
	// Findings is what a rejected or failed node found: the feedback a
	// retry hands to the next attempt.
	Findings   *Feedback `json:"findings,omitempty"`
	Claim      *Claim    `json:"claim,omitempty"`
	Route      *Route    `json:"route,omitempty"`
	Sessions   []string  `json:"sessions,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Reclaimed counts the claims taken over from an owner that had gone:
	// the briefing warns that an interrupted run may have left work behind.
	Reclaimed int `json:"reclaimed,omitempty"`
	// Malformed counts results refused as malformed since the node last
	// finished: the second fails it.
	Malformed int `json:"malformed,omitempty"`
	// ChangedFiles are the files the node's result claimed and git
	// confirmed.
	ChangedFiles []string `json:"changedFiles,omitempty"`
	// Superseded records results and interruptions that arrived under a
	// ticket that no longer held the node: never applied.
	Superseded []Superseded `json:"superseded,omitempty"`
	// Evidence names the folder, under the node's in the run's folder,
	// that holds the applied outcome's result and raw text.
	Evidence string `json:"evidence,omitempty"`
	// Worktree is the git worktree the node ran in, when isolated.
	Worktree string `json:"worktree,omitempty"`
}

// Terminal reports whether the node can never run again.
func (n *Node) Terminal() bool {
	return n.State.Finished() || n.State == StateSkipped || n.State == StateUnreachable
}

// Settled reports whether the node's outcome is for good, which an after
// edge waits for: passed, failed or rejected for good, skipped or
// unreachable. A failure a retry may still replace is not settled.
func (n *Node) Settled() bool {
	switch n.State {
	case StatePassed, StateSkipped, StateUnreachable:
		return true
	case StateRejected, StateFailed:
		return n.Final || n.Retired
	}
	return false
}

// Live reports whether the node belongs to the graph as it stands, not to
// an attempt or a spec a retry replaced.
func (n *Node) Live() bool { return !n.Retired && n.State != StateSkipped }

// Feedback is what a rejection or failure said, handed to the next attempt.
type Feedback struct {
	From     string   `json:"from"` // the node that rejected or failed
	Reason   string   `json:"reason"`
	Gaps     []string `json:"gaps,omitempty"`
	Failed   []Check  `json:"failed,omitempty"` // failed checks
	Problems []string `json:"problems,omitempty"`
	// Blame names the subgoals a goal gate's rejection blames.
	Blame []string `json:"blame,omitempty"`
}

// Claim is a node's claim: whose ticket holds it, since when, and how it
// runs.
type Claim struct {
	Ticket    Ticket    `json:"ticket"`
	ClaimedAt time.Time `json:"claimedAt"`
	// Self marks a node the caller runs and submits (engine self).
	Self bool `json:"self,omitempty"`
}

// Ticket identifies one claimer: a process (pid, its start time in clock
// ticks since boot, the boot it runs in) and a nonce for this claim.
type Ticket struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
	Boot  string `json:"boot"`
	Nonce string `json:"nonce"`
}

// Superseded is a result or interruption refused because its ticket no
// longer held the node.
type Superseded struct {
	Ticket Ticket    `json:"ticket"`
	At     time.Time `json:"at"`
	What   string    `json:"what"` // "result" or "interruption"
	Note   string    `json:"note,omitempty"`
}

// Route is how a node was routed: the engine and model chosen and why.
type Route struct {
	Engine   string    `json:"engine"` // an engine name, or "self"
	Model    string    `json:"model,omitempty"`
	Mode     string    `json:"mode,omitempty"`
	Scenario string    `json:"scenario,omitempty"`
	Reason   string    `json:"reason"`
	Probes   []Probe   `json:"probes,omitempty"`
	At       time.Time `json:"at,omitzero"`
}

// Self is the engine name of a node the caller runs itself.
const Self = "self"

// Probe is one readiness probe's answer, as routing saw it.
type Probe struct {
	Engine string `json:"engine"`
	Model  string `json:"model,omitempty"`
	Ready  bool   `json:"ready"`
	Detail string `json:"detail,omitempty"`
	Cached bool   `json:"cached,omitempty"`
}

// Spec is what setgoal produces: the subgoals, their acceptance and their
// edges.
type Spec struct {
	Version  int       `json:"version"`
	From     string    `json:"from"` // the setgoal node
	Subgoals []Subgoal `json:"subgoals"`
}

// Subgoal is one part of the work.
type Subgoal struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Acceptance []string `json:"acceptance,omitempty"`
	// Deps must have passed their gate before this subgoal starts; After
	// must only have settled (passed or not).
	Deps  []string `json:"deps,omitempty"`
	After []string `json:"after,omitempty"`
}

// Check is one check a node ran and its outcome.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Outcome is the account of a finished run.
type Account struct {
	Shipped    []string  `json:"shipped"`
	NotShipped []Missing `json:"notShipped"`
	// Goal is the goal gate's verdict, or "unreachable".
	Goal string `json:"goal,omitempty"`
	// Report is the report node's id when it passed.
	Report string `json:"report,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Missing is a subgoal that did not ship, and why.
type Missing struct {
	Subgoal string    `json:"subgoal"`
	State   NodeState `json:"state"`
	Reason  string    `json:"reason"`
}
