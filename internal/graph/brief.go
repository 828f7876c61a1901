package graph

import (
	"fmt"
	"strings"
)

// Results looks up the structured result a finished node left in the run
// (nil when there is none).
type Results func(nodeID string) *Result

// maxBriefPart bounds each quoted part of a briefing (a plan, a handoff),
// so a briefing stays a briefing however long the run's results are.
const maxBriefPart = 8 << 10

// Brief builds a node's briefing from the run itself: the request, what
// the nodes before it produced, the subgoal and its acceptance, the
// feedback of the attempt it replaces, and how to answer. No caller text
// goes into it beyond the run's request.
func Brief(r *Run, n *Node, results Results, worktree string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("Corral graph run %s · node %s · stage %s", r.ID, n.ID, n.Stage)
	if n.Attempt > 1 {
		w(" · attempt %d", n.Attempt)
	}
	w("\n\n")
	w("You are one node of a graph of agents working on one request. %s\n\n", role(n.Stage))
	w("## The request\n\n%s\n\n", clip(strings.TrimSpace(r.Request), maxBriefPart))
	if worktree != "" {
		w("Work in %s.\n\n", worktree)
	}
	if n.Reclaimed > 0 {
		w("Note: an earlier run of this node was interrupted (whoever ran it is gone). The worktree may hold part of its work; check before you build on it.\n\n")
	}
	plan := results(r.latestPassed(StagePlan, ""))
	switch n.Stage {
	case StagePlan:
	case StageSetGoal:
		writePlan(&b, plan)
		w("## Your task\n\nSplit the work into subgoals, each small enough for one agent to implement and test. Give each an id (U1, U2, …), a title, acceptance criteria a reviewer can check, `deps` (subgoals whose accepted work it builds on) and `after` (subgoals it must only come after).\n\n")
	case StageCritique:
		writePlan(&b, plan)
		writeSpecFrom(&b, results(firstDep(n)))
		w("## Your task\n\nJudge whether the spec is sound: it covers the request, its acceptance criteria can be checked, its edges are right. Say \"sound\", or \"unsound\" with the problems.\n\n")
	case StageImplement, StageTest, StageGate:
		r.writeSubgoalBrief(&b, n, results)
	case StageGoalGate:
		r.writeSpec(&b)
		w("## The subgoals' gates\n\n")
		for _, id := range n.Deps {
			if g := r.Node(id); g != nil {
				w("- %s: %s", g.Subgoal, describeState(g))
				if res := results(id); res != nil && res.Summary != "" {
					w(" — %s", oneLine(res.Summary))
				}
				w("\n")
			}
		}
		w("\n## Your task\n\nVerify that the request as a whole is met by the accepted subgoals together. Say \"verified\", or \"unverified\" with the reason and, in `blame`, the subgoals at fault.\n\n")
	case StageReport:
		r.writeSpec(&b)
		acc := r.Account()
		w("## What shipped (Corral's account)\n\n")
		w("Shipped: %s\n", orNone(acc.Shipped))
		for _, m := range acc.NotShipped {
			w("Not shipped: %s — %s\n", m.Subgoal, m.Reason)
		}
		if acc.Goal != "" {
			w("Goal gate: %s\n", acc.Goal)
		}
		w("\n## Your task\n\nWrite the account of this run for the person who asked: what was done, what was not and why, what to look at next. Be honest about failures.\n\n")
	}
	if fb := n.Feedback; fb != nil {
		w("## Feedback from the previous attempt (%s)\n\n", fb.From)
		w("Reason: %s\n", clip(fb.Reason, maxBriefPart))
		for _, g := range fb.Gaps {
			w("- gap: %s\n", g)
		}
		for _, c := range fb.Failed {
			w("- failed check %s: %s\n", c.Name, c.Detail)
		}
		for _, p := range fb.Problems {
			w("- problem: %s\n", p)
		}
		w("\nFix what it names.\n\n")
	}
	w("## How to answer\n\n%s\n", ResultSchemaHint(n.Stage))
	return b.String()
}

func role(st Stage) string {
	switch st {
	case StagePlan:
		return "You plan: read the request and the worktree, and say how to approach the work. Change nothing."
	case StageSetGoal:
		return "You set the goal: turn the plan into a spec of subgoals. Change nothing."
	case StageCritique:
		return "You critique the spec before anyone implements it. Change nothing."
	case StageImplement:
		return "You implement one subgoal: change the files it needs, and list every file you changed."
	case StageTest:
		return "You test one subgoal's implementation: run (and write, when needed) the checks its acceptance calls for."
	case StageGate:
		return "You are the gate of one subgoal: judge its implementation against its acceptance, from the evidence. Change nothing."
	case StageGoalGate:
		return "You are the goal gate: judge whether the accepted subgoals together meet the request. Change nothing."
	case StageReport:
		return "You write the run's report. Change nothing."
	}
	return ""
}

func (r *Run) writeSubgoalBrief(b *strings.Builder, n *Node, results Results) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	s, _ := r.subgoal(n.Subgoal)
	w("## Your subgoal: %s — %s\n\n", s.ID, s.Title)
	if len(s.Acceptance) > 0 {
		w("Acceptance:\n")
		for _, a := range s.Acceptance {
			w("- %s\n", a)
		}
		w("\n")
	}
	for _, d := range s.Deps {
		if res := results(r.latestPassed(StageImplement, d)); res != nil && res.Handoff != "" {
			w("Handoff from %s: %s\n\n", d, clip(res.Handoff, maxBriefPart))
		}
	}
	impl := r.Node(firstDep(n))
	if n.Stage == StageGate && impl != nil {
		impl = r.Node(firstDep(impl)) // gate ← test ← implement
	}
	if n.Stage != StageImplement && impl != nil {
		if res := results(impl.ID); res != nil {
			w("## What %s did\n\n%s\n", impl.ID, clip(res.Summary, maxBriefPart))
			if len(res.ChangedFiles) > 0 {
				w("Changed files: %s\n", strings.Join(res.ChangedFiles, ", "))
			}
			if res.Handoff != "" {
				w("Handoff: %s\n", clip(res.Handoff, maxBriefPart))
			}
			w("\n")
		}
	}
	if n.Stage == StageGate {
		if test := r.Node(firstDep(n)); test != nil {
			if res := results(test.ID); res != nil {
				w("## What %s found\n\n%s\n", test.ID, clip(res.Summary, maxBriefPart))
				for _, c := range res.Checks {
					mark := "ok"
					if !c.OK {
						mark = "FAILED"
					}
					w("- %s: %s %s\n", c.Name, mark, c.Detail)
				}
				w("\n")
			}
		}
		w("## Your task\n\nSay \"accept\" only if the acceptance is met and the checks passed; else \"reject\" with the reason, the gaps and the failed checks.\n\n")
	}
}

func writePlan(b *strings.Builder, plan *Result) {
	if plan == nil {
		return
	}
	text := plan.Plan
	if text == "" {
		text = plan.Summary
	}
	fmt.Fprintf(b, "## The plan\n\n%s\n\n", clip(text, maxBriefPart))
	if plan.Handoff != "" {
		fmt.Fprintf(b, "Handoff: %s\n\n", clip(plan.Handoff, maxBriefPart))
	}
}

func writeSpecFrom(b *strings.Builder, set *Result) {
	if set == nil {
		return
	}
	fmt.Fprintf(b, "## The spec\n\n")
	for _, s := range set.Subgoals {
		writeSubgoal(b, s)
	}
	b.WriteString("\n")
}

func (r *Run) writeSpec(b *strings.Builder) {
	if r.Spec == nil {
		return
	}
	fmt.Fprintf(b, "## The spec\n\n")
	for _, s := range r.Spec.Subgoals {
		writeSubgoal(b, s)
	}
	b.WriteString("\n")
}

func writeSubgoal(b *strings.Builder, s Subgoal) {
	fmt.Fprintf(b, "- %s: %s", s.ID, s.Title)
	if len(s.Deps) > 0 {
		fmt.Fprintf(b, " (deps %s)", strings.Join(s.Deps, ", "))
	}
	if len(s.After) > 0 {
		fmt.Fprintf(b, " (after %s)", strings.Join(s.After, ", "))
	}
	b.WriteString("\n")
	for _, a := range s.Acceptance {
		fmt.Fprintf(b, "  - accept: %s\n", a)
	}
}

// latestPassed is the id of the newest passed node of a role, or "".
func (r *Run) latestPassed(st Stage, subgoal string) string {
	for i := len(r.Nodes) - 1; i >= 0; i-- {
		n := r.Nodes[i]
		if n.Stage == st && n.Subgoal == subgoal && n.State == StatePassed {
			return n.ID
		}
	}
	return ""
}

func firstDep(n *Node) string {
	if len(n.Deps) == 0 {
		return ""
	}
	return n.Deps[0]
}

func oneLine(s string) string { return clip(strings.Join(strings.Fields(s), " "), 300) }

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "nothing"
	}
	return strings.Join(xs, ", ")
}
