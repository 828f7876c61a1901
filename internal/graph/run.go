package graph

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runIDPattern is what a run id may be: it names a folder.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidRunID reports whether id can name a run.
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

// OpenOptions describe a new run.
type OpenOptions struct {
	ID      string
	Request string
	Cwd     string
	Policy  Policy
	Now     time.Time
}

// maxRequest bounds a run's request.
const maxRequest = 256 << 10

// New returns a run opened on a request: plan → setgoal → critique. The
// per-subgoal nodes come when setgoal produces a spec.
func New(o OpenOptions) (*Run, error) {
	switch {
	case !ValidRunID(o.ID):
		return nil, Errorf(CodeBadRequest, "run id %q: want 1 to 64 letters, digits, _ or -, starting with a letter or digit", o.ID)
	case strings.TrimSpace(o.Request) == "":
		return nil, Errorf(CodeBadRequest, "a run needs a request")
	case len(o.Request) > maxRequest:
		return nil, Errorf(CodeBadRequest, "request is %d bytes; at most %d", len(o.Request), maxRequest)
	case o.Cwd == "" || o.Cwd[0] != '/':
		return nil, Errorf(CodeBadRequest, "cwd %q: want an absolute path", o.Cwd)
	}
	if err := o.Policy.Check(); err != nil {
		return nil, err
	}
	r := &Run{
		Version:   FormatVersion,
		ID:        o.ID,
		Request:   o.Request,
		Cwd:       o.Cwd,
		State:     RunOpen,
		CreatedAt: o.Now,
		UpdatedAt: o.Now,
		Policy:    o.Policy,
		Budgets:   map[string]int{budgetSpec: 1},
	}
	plan := r.add(&Node{Stage: StagePlan, Attempt: 1})
	set := r.add(&Node{Stage: StageSetGoal, Attempt: 1, Deps: []string{plan.ID}})
	r.add(&Node{Stage: StageCritique, Attempt: 1, Deps: []string{set.ID}})
	r.Emit(EvRunOpened, "", map[string]any{"request": clip(o.Request, 200), "cwd": o.Cwd})
	return r, nil
}

// Budget targets other than subgoal ids.
const (
	budgetSpec   = "spec"
	budgetReport = "report"
)

// Index builds the node index; the store calls it after decoding.
func (r *Run) Index() {
	r.index = make(map[string]*Node, len(r.Nodes))
	for _, n := range r.Nodes {
		r.index[n.ID] = n
	}
	if r.Budgets == nil {
		r.Budgets = map[string]int{}
	}
}

// Check validates a decoded run's shape, so that nothing built on it can
// trip on a missing or doubled node, and builds its index.
func (r *Run) Check() error {
	seen := make(map[string]bool, len(r.Nodes))
	for i, n := range r.Nodes {
		switch {
		case n == nil:
			return fmt.Errorf("node %d is null", i+1)
		case n.ID == "":
			return fmt.Errorf("node %d has no id", i+1)
		case seen[n.ID]:
			return fmt.Errorf("node %s appears twice", n.ID)
		case !slices.Contains(Stages, n.Stage):
			return fmt.Errorf("node %s has an unknown stage %q", n.ID, n.Stage)
		case !slices.Contains(states, n.State):
			return fmt.Errorf("node %s has an unknown state %q", n.ID, n.State)
		}
		seen[n.ID] = true
	}
	r.Index()
	return nil
}

// Node returns the node of that id, or nil.
func (r *Run) Node(id string) *Node {
	if r.index == nil {
		r.Index()
	}
	return r.index[id]
}

// nodeID names a node: stage, subgoal, and the attempt when past the first.
func nodeID(st Stage, subgoal string, attempt int) string {
	id := string(st)
	if subgoal != "" {
		id += ":" + subgoal
	}
	if attempt > 1 {
		id += ":" + strconv.Itoa(attempt)
	}
	return id
}

// add appends a node, numbering its attempt past every earlier node of the
// same role, so ids never repeat in a run.
func (r *Run) add(n *Node) *Node {
	if r.index == nil {
		r.Index()
	}
	for r.index[nodeID(n.Stage, n.Subgoal, n.Attempt)] != nil {
		n.Attempt++
	}
	n.ID = nodeID(n.Stage, n.Subgoal, n.Attempt)
	n.State = StatePending
	n.SpecVersion = r.SpecVersion
	r.Nodes = append(r.Nodes, n)
	r.index[n.ID] = n
	return n
}

// Unmet lists why a node may not run yet: each deps edge whose node has
// not passed and each after edge whose node has not settled.
func (r *Run) Unmet(n *Node) []string {
	var out []string
	for _, id := range n.Deps {
		d := r.Node(id)
		switch {
		case d == nil:
			out = append(out, id+" (missing)")
		case d.State != StatePassed:
			out = append(out, fmt.Sprintf("%s (%s)", id, describeState(d)))
		}
	}
	for _, id := range n.After {
		d := r.Node(id)
		switch {
		case d == nil:
			out = append(out, id+" (missing)")
		case !d.Settled():
			out = append(out, fmt.Sprintf("%s (%s; after)", id, describeState(d)))
		}
	}
	return out
}

func describeState(n *Node) string {
	s := string(n.State)
	if n.Verdict != "" && n.State.Finished() {
		s += ": " + n.Verdict
	}
	return s
}

// Ready reports whether a pending node's edges all hold.
func (r *Run) Ready(n *Node) bool {
	if n.State != StatePending || r.State != RunOpen {
		return false
	}
	for _, id := range n.Deps {
		if d := r.Node(id); d == nil || d.State != StatePassed {
			return false
		}
	}
	for _, id := range n.After {
		if d := r.Node(id); d == nil || !d.Settled() {
			return false
		}
	}
	return true
}

// ReadyNodes lists the nodes that may run now, in creation order.
func (r *Run) ReadyNodes() []*Node {
	var out []*Node
	for _, n := range r.Nodes {
		if r.Ready(n) {
			out = append(out, n)
		}
	}
	return out
}

// Event is one line of a run's graph events (events.jsonl in its folder).
type RunEvent struct {
	Seq  int64           `json:"seq"`
	TS   time.Time       `json:"ts"`
	Run  string          `json:"run"`
	Type string          `json:"type"`
	Node string          `json:"node,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Graph event types. docs/graph.md lists their data.
const (
	EvRunOpened        = "runOpened"
	EvNodeClaimed      = "nodeClaimed"
	EvNodeReclaimed    = "nodeReclaimed"
	EvNodeReleased     = "nodeReleased"
	EvNodeSession      = "nodeSession"
	EvNodeFinished     = "nodeFinished"
	EvNodeMalformed    = "nodeMalformed"
	EvResultSuperseded = "resultSuperseded"
	EvSpecDerived      = "specDerived"
	EvRetried          = "retried"
	EvSettled          = "settled"
	EvRunComplete      = "runComplete"
	EvRunBlocked       = "runBlocked"
)

// Emit records a graph event for the store to append once the change is
// written. Seq and time are set by the store.
func (r *Run) Emit(typ, node string, data any) {
	var raw json.RawMessage
	if data != nil {
		raw, _ = json.Marshal(data)
	}
	r.events = append(r.events, RunEvent{Run: r.ID, Type: typ, Node: node, Data: raw})
}

// Dirty reports whether the change under way has recorded anything.
func (r *Run) Dirty() bool { return len(r.events) > 0 }

// TakeEvents returns the events emitted since the last call and forgets
// them.
func (r *Run) TakeEvents() []RunEvent {
	ev := r.events
	r.events = nil
	return ev
}

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
