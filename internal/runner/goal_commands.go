package runner

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// The goal's commands. The goal itself lives in the spec (meta.json); the
// goal policy keeps only the count of checks in a row. A goal in the spec
// is never changed in place: every change stores a new one, so a copy of
// the spec taken earlier stays as it was.

func (r *Runner) setGoal(text string) (event.GoalSetData, error) {
	clauses := Clauses(text)
	if len(clauses) == 0 {
		return event.GoalSetData{}, wire.Errorf(wire.CodeBadRequest, "setGoal needs a goal")
	}
	spec := r.updateSpec(func(s *wire.Spec) { s.Goal = &wire.Goal{Text: strings.TrimSpace(text)} })
	r.goal.reset()
	if err := r.store.saveSpec(spec); err != nil {
		return event.GoalSetData{}, err
	}
	d := event.GoalSetData{Goal: spec.Goal.Text, Clauses: clauses}
	r.emit(event.GoalSet, d)
	return d, nil
}

func (r *Runner) getGoal() (command.GoalState, error) {
	spec := r.Spec()
	st := command.GoalState{Clauses: []string{}, Attempts: r.goal.attemptsSoFar(), Limit: goalLimit(spec)}
	if g := spec.Goal; g != nil {
		st.Goal, st.Done, st.Clauses = g.Text, g.Done, Clauses(g.Text)
	}
	return st, nil
}

func (r *Runner) clearGoal() (command.ClearGoalResult, error) {
	had := false
	spec := r.updateSpec(func(s *wire.Spec) {
		had = s.Goal != nil
		s.Goal = nil
	})
	if !had {
		return command.ClearGoalResult{}, wire.Errorf(wire.CodeNotFound, "the session has no goal")
	}
	if err := r.store.saveSpec(spec); err != nil {
		return command.ClearGoalResult{}, err
	}
	r.emit(event.GoalCleared, nil)
	return command.ClearGoalResult{Cleared: true}, nil
}

func (r *Runner) markGoalDone() (event.GoalCheckData, error) {
	var g *wire.Goal
	spec := r.updateSpec(func(s *wire.Spec) {
		if s.Goal != nil {
			done := *s.Goal
			done.Done = true
			s.Goal, g = &done, &done
		}
	})
	if g == nil {
		return event.GoalCheckData{}, wire.Errorf(wire.CodeNotFound, "the session has no goal")
	}
	if err := r.store.saveSpec(spec); err != nil {
		return event.GoalCheckData{}, err
	}
	clauses := Clauses(g.Text)
	d := event.GoalCheckData{Goal: g.Text, Total: len(clauses), Met: len(clauses), Holds: true, By: "user",
		Summary: fmt.Sprintf("holds · %d/%d (marked done)", len(clauses), len(clauses))}
	for _, c := range clauses {
		d.Clauses = append(d.Clauses, event.GoalClause{Clause: c, Met: true, Evidence: "marked done by a person"})
	}
	r.emit(event.GoalCheck, d)
	return d, nil
}
