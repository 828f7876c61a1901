package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// defaultGoalLimit bounds goal-check turns in a row.
const defaultGoalLimit = 20

// clauseSplit cuts a goal into clauses: lines, bullets, semicolons and
// sentence ends. Conjunctions inside a sentence are left alone, since
// splitting "read and summarise" would change its meaning.
var clauseSplit = regexp.MustCompile(`\n+|;\s*|\.\s+`)

// Clauses splits a goal into the clauses judged one by one.
func Clauses(goal string) []string {
	var out []string
	for _, c := range clauseSplit.Split(goal, -1) {
		c = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(c), "-*•0123456789.) "))
		c = strings.TrimSuffix(c, ".")
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func (r *Runner) setGoal(text string) (any, error) {
	clauses := Clauses(text)
	if len(clauses) == 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "setGoal needs a goal")
	}
	r.mu.Lock()
	r.spec.Goal = &wire.Goal{Text: strings.TrimSpace(text)}
	r.goalAttempts = 0
	spec := r.spec
	r.mu.Unlock()
	if err := r.saveSpec(spec); err != nil {
		return nil, err
	}
	d := wire.GoalSetData{Goal: spec.Goal.Text, Clauses: clauses}
	r.emit(wire.EvGoalSet, d)
	return d, nil
}

// GoalState is the result of getGoal.
type GoalState struct {
	Goal     string   `json:"goal,omitempty"`
	Clauses  []string `json:"clauses"`
	Done     bool     `json:"done"`
	Attempts int      `json:"attempts"`
	Limit    int      `json:"limit"`
}

func (r *Runner) getGoal() (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := GoalState{Clauses: []string{}, Attempts: r.goalAttempts, Limit: r.goalLimitLocked()}
	if g := r.spec.Goal; g != nil {
		st.Goal, st.Done, st.Clauses = g.Text, g.Done, Clauses(g.Text)
	}
	return st, nil
}

func (r *Runner) clearGoal() (any, error) {
	r.mu.Lock()
	had := r.spec.Goal != nil
	r.spec.Goal = nil
	spec := r.spec
	r.mu.Unlock()
	if !had {
		return nil, wire.Errorf(wire.CodeNotFound, "the session has no goal")
	}
	if err := r.saveSpec(spec); err != nil {
		return nil, err
	}
	r.emit(wire.EvGoalCleared, nil)
	return map[string]bool{"cleared": true}, nil
}

func (r *Runner) markGoalDone() (any, error) {
	r.mu.Lock()
	g := r.spec.Goal
	if g == nil {
		r.mu.Unlock()
		return nil, wire.Errorf(wire.CodeNotFound, "the session has no goal")
	}
	g.Done = true
	spec := r.spec
	clauses := Clauses(g.Text)
	r.mu.Unlock()
	if err := r.saveSpec(spec); err != nil {
		return nil, err
	}
	d := wire.GoalCheckData{Goal: g.Text, Total: len(clauses), Met: len(clauses), Holds: true, By: "user",
		Summary: fmt.Sprintf("holds · %d/%d (marked done)", len(clauses), len(clauses))}
	for _, c := range clauses {
		d.Clauses = append(d.Clauses, wire.GoalClause{Clause: c, Met: true, Evidence: "marked done by a person"})
	}
	r.emit(wire.EvGoalCheck, d)
	return d, nil
}

func (r *Runner) goalLimitLocked() int {
	if r.spec.GoalLimit > 0 {
		return r.spec.GoalLimit
	}
	return defaultGoalLimit
}

// checkGoal judges the goal after a turn that ended normally and queues a
// goalCheck turn naming the unmet clauses, at most GoalLimit in a row.
func (r *Runner) checkGoal(ctx context.Context) {
	r.mu.Lock()
	g := r.spec.Goal
	if g == nil || g.Done || r.closed || len(r.queue) > 0 || r.spendCapHit {
		// A queued human message comes first; the goal is checked
		// after it. Past the spend cap nothing is judged.
		r.mu.Unlock()
		return
	}
	text := g.Text
	limit := r.goalLimitLocked()
	r.goalAttempts++
	attempt := r.goalAttempts
	judge, ok := r.eng.(engine.Judge)
	r.mu.Unlock()

	clauses := Clauses(text)
	d := wire.GoalCheckData{Goal: text, Total: len(clauses), Attempt: attempt, Limit: limit, By: "judge"}
	var answer string
	if ok {
		var usage wire.UsageData
		var err error
		answer, usage, err = judge.Judge(ctx, judgePrompt(clauses))
		if err != nil {
			r.log.Warn("goal judge", zap.Error(err))
			answer = ""
		}
		if usage.InputTokens+usage.OutputTokens > 0 {
			(*host)(r).Emit(wire.EvUsage, usage)
		}
	}
	d.Clauses = parseVerdicts(clauses, answer, ok)
	for _, c := range d.Clauses {
		if c.Met {
			d.Met++
		}
	}
	d.Holds = d.Met == d.Total
	word := "unmet"
	if d.Holds {
		word = "holds"
	}
	d.Summary = fmt.Sprintf("%s · %d/%d", word, d.Met, d.Total)
	if !d.Holds && attempt >= limit {
		d.LimitReached = true
		d.Summary += fmt.Sprintf(" · stopped after %d checks in a row", limit)
	}
	r.emit(wire.EvGoalCheck, d)
	if d.Holds || d.LimitReached || !ok {
		return
	}
	var b strings.Builder
	b.WriteString("Goal check: these parts of the goal are not met yet:\n")
	for _, c := range d.Clauses {
		if !c.Met {
			fmt.Fprintf(&b, "- %s (evidence: %s)\n", c.Clause, c.Evidence)
		}
	}
	b.WriteString("Keep working until they hold.")
	r.enqueue(b.String(), "goalCheck", false)
}

func judgePrompt(clauses []string) string {
	var b strings.Builder
	b.WriteString("Judge, from this session's work so far, whether each clause of the goal holds. " +
		"Answer with exactly one line per clause, in order, in the form\n" +
		"MET: <clause> — <evidence>\nor\nUNMET: <clause> — <evidence>\n\nClauses:\n")
	for _, c := range clauses {
		fmt.Fprintf(&b, "- %s\n", c)
	}
	return b.String()
}

var verdictLine = regexp.MustCompile(`(?i)^\W*(MET|UNMET|NOT MET)\b\W*(.*)$`)

// parseVerdicts reads one verdict line per clause, in order. A clause whose
// line is missing or unreadable counts as not met.
func parseVerdicts(clauses []string, answer string, judged bool) []wire.GoalClause {
	var lines []string
	for _, l := range strings.Split(answer, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	out := make([]wire.GoalClause, len(clauses))
	for i, c := range clauses {
		out[i] = wire.GoalClause{Clause: c, Evidence: "the verdict could not be read"}
		if !judged {
			out[i].Evidence = "this engine cannot judge goals"
			continue
		}
		if i >= len(lines) {
			continue
		}
		m := verdictLine.FindStringSubmatch(lines[i])
		if m == nil {
			out[i].Evidence = "the verdict could not be read: " + clip(lines[i], 200)
			continue
		}
		out[i].Met = strings.EqualFold(m[1], "MET")
		evidence := m[2]
		if _, after, ok := strings.Cut(evidence, "—"); ok {
			evidence = after
		} else if _, after, ok := strings.Cut(evidence, " - "); ok {
			evidence = after
		}
		out[i].Evidence = strings.TrimSpace(evidence)
	}
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
