package graph

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// subgoalPattern is what a subgoal id may be. It is part of node ids, so no
// ':'.
var subgoalPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// reserved ids would collide with retry targets.
var reserved = []string{budgetSpec, budgetReport, "goal"}

// MaxSubgoals bounds a spec.
const MaxSubgoals = 500

// CheckSpec validates subgoals: ids well formed and unique, titles present,
// and deps and after edges free of self-references, dangling ids,
// duplicates and cycles.
func CheckSpec(subgoals []Subgoal) error {
	if len(subgoals) == 0 {
		return Errorf(CodeBadSpec, "the spec has no subgoals")
	}
	if len(subgoals) > MaxSubgoals {
		return Errorf(CodeBadSpec, "the spec has %d subgoals; at most %d", len(subgoals), MaxSubgoals)
	}
	ids := make(map[string]int, len(subgoals))
	for i, s := range subgoals {
		switch {
		case !subgoalPattern.MatchString(s.ID):
			return Errorf(CodeBadSpec, "subgoal %d: id %q: want a letter then up to 31 letters, digits, _ or -", i+1, s.ID)
		case slices.Contains(reserved, strings.ToLower(s.ID)):
			return Errorf(CodeBadSpec, "subgoal %d: id %q is reserved", i+1, s.ID)
		case strings.TrimSpace(s.Title) == "":
			return Errorf(CodeBadSpec, "subgoal %s has no title", s.ID)
		}
		if _, dup := ids[s.ID]; dup {
			return Errorf(CodeBadSpec, "subgoal id %s appears twice", s.ID)
		}
		ids[s.ID] = i
	}
	for _, s := range subgoals {
		seen := map[string]string{}
		for kind, list := range map[string][]string{"deps": s.Deps, "after": s.After} {
			for _, d := range list {
				switch {
				case d == s.ID:
					return Errorf(CodeBadSpec, "subgoal %s lists itself in %s", s.ID, kind)
				case !hasKey(ids, d):
					return Errorf(CodeBadSpec, "subgoal %s: %s names %q, which is not a subgoal", s.ID, kind, d)
				}
				if prev, ok := seen[d]; ok {
					return Errorf(CodeBadSpec, "subgoal %s names %s twice (in %s and %s)", s.ID, d, prev, kind)
				}
				seen[d] = kind
			}
		}
	}
	if cycle := findCycle(subgoals, ids); cycle != nil {
		return Errorf(CodeBadSpec, "the subgoals' edges form a cycle: %s", strings.Join(cycle, " → "))
	}
	return nil
}

func hasKey(m map[string]int, k string) bool { _, ok := m[k]; return ok }

// findCycle returns one cycle over deps and after edges, or nil.
func findCycle(subgoals []Subgoal, ids map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(subgoals))
	var stack []string
	var cycle []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, subgoals[i].ID)
		for _, d := range slices.Concat(subgoals[i].Deps, subgoals[i].After) {
			j := ids[d]
			switch color[j] {
			case grey:
				k := slices.Index(stack, d)
				cycle = append(slices.Clone(stack[k:]), d)
				return true
			case white:
				if visit(j) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range subgoals {
		if color[i] == white && visit(i) {
			return cycle
		}
	}
	return nil
}

// derive makes the live spec of a setgoal node's subgoals and the nodes
// that carry it out: per subgoal implement → test → gate (deps), subgoal
// deps mapped onto gate nodes (deps) and subgoal after onto gate nodes
// (after), then gate:goal over every gate and report after it.
func (r *Run) derive(setgoal *Node, subgoals []Subgoal) {
	r.SpecVersion++
	r.Spec = &Spec{Version: r.SpecVersion, From: setgoal.ID, Subgoals: subgoals}
	critique := r.critiqueOf(setgoal.ID)
	gates := make(map[string]string, len(subgoals))
	impls := make(map[string]*Node, len(subgoals))
	for _, s := range subgoals {
		impl := r.add(&Node{Stage: StageImplement, Subgoal: s.ID, Attempt: 1})
		if critique != nil {
			impl.Deps = []string{critique.ID}
		}
		test := r.add(&Node{Stage: StageTest, Subgoal: s.ID, Attempt: 1, Deps: []string{impl.ID}})
		gate := r.add(&Node{Stage: StageGate, Subgoal: s.ID, Attempt: 1, Deps: []string{test.ID}})
		impls[s.ID], gates[s.ID] = impl, gate.ID
		r.Budgets[s.ID] = 1
	}
	for _, s := range subgoals {
		impl := impls[s.ID]
		for _, d := range s.Deps {
			impl.Deps = append(impl.Deps, gates[d])
		}
		for _, a := range s.After {
			impl.After = append(impl.After, gates[a])
		}
	}
	goalDeps := make([]string, 0, len(subgoals))
	for _, s := range subgoals {
		goalDeps = append(goalDeps, gates[s.ID])
	}
	goal := r.add(&Node{Stage: StageGoalGate, Attempt: 1, Deps: goalDeps})
	r.add(&Node{Stage: StageReport, Attempt: 1, After: []string{goal.ID}})
	r.Budgets[budgetReport] = 1
	ids := make([]string, len(subgoals))
	for i, s := range subgoals {
		ids[i] = s.ID
	}
	r.Emit(EvSpecDerived, setgoal.ID, map[string]any{"version": r.SpecVersion, "subgoals": ids, "nodes": 3*len(subgoals) + 2})
}

// critiqueOf is the live critique node that judges setgoal's spec.
func (r *Run) critiqueOf(setgoal string) *Node {
	for _, n := range r.Nodes {
		if n.Stage == StageCritique && n.Live() && slices.Contains(n.Deps, setgoal) {
			return n
		}
	}
	return nil
}

// subgoal returns the live spec's subgoal of that id.
func (r *Run) subgoal(id string) (Subgoal, bool) {
	if r.Spec == nil {
		return Subgoal{}, false
	}
	for _, s := range r.Spec.Subgoals {
		if s.ID == id {
			return s, true
		}
	}
	return Subgoal{}, false
}

// liveNode returns the live node of a stage (and subgoal): the latest
// attempt not retired.
func (r *Run) liveNode(st Stage, subgoal string) *Node {
	for i := len(r.Nodes) - 1; i >= 0; i-- {
		n := r.Nodes[i]
		if n.Stage == st && n.Subgoal == subgoal && n.Live() {
			return n
		}
	}
	return nil
}

// LiveGate is the live gate node of a subgoal, or nil.
func (r *Run) LiveGate(subgoal string) *Node { return r.liveNode(StageGate, subgoal) }

func (s Subgoal) String() string {
	return fmt.Sprintf("%s: %s", s.ID, s.Title)
}
