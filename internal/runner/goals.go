package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
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

// goalPolicy checks the session's goal after each turn that ended
// normally: the engine judges each clause (engine.Judge), a goalCheck
// event reports the verdicts, and while a clause is unmet a goalCheck
// message naming the unmet clauses is queued, at most the goal's limit in
// a row. A person's message resets the count.
type goalPolicy struct {
	host policyHost
	log  *zap.Logger

	mu       sync.Mutex
	attempts int // goal checks since the last person's message
}

// reset starts the count of checks in a row again.
func (g *goalPolicy) reset() {
	g.mu.Lock()
	g.attempts = 0
	g.mu.Unlock()
}

// attemptsSoFar is the number of checks since the count was reset.
func (g *goalPolicy) attemptsSoFar() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.attempts
}

// goalLimit bounds goal-check turns in a row.
func goalLimit(spec wire.Spec) int {
	if spec.GoalLimit > 0 {
		return spec.GoalLimit
	}
	return defaultGoalLimit
}

func (g *goalPolicy) afterTurn(ctx context.Context, end turnEnd) {
	if end.outcome != "done" {
		return
	}
	spec := g.host.spec()
	goal := spec.Goal
	if goal == nil || goal.Done || g.host.busy() {
		// A queued message comes first; the goal is checked after it.
		// Past the spend cap nothing is judged.
		return
	}
	limit := goalLimit(spec)
	g.mu.Lock()
	g.attempts++
	attempt := g.attempts
	g.mu.Unlock()
	judge, ok := end.eng.(engine.Judge)

	clauses := Clauses(goal.Text)
	d := event.GoalCheckData{Goal: goal.Text, Total: len(clauses), Attempt: attempt, Limit: limit, By: "judge"}
	var answer string
	if ok {
		var usage event.UsageData
		var err error
		answer, usage, err = judge.Judge(ctx, judgePrompt(clauses))
		if err != nil {
			g.log.Warn("goal judge", zap.Error(err))
			answer = ""
		}
		if usage.InputTokens+usage.OutputTokens > 0 {
			g.host.engineUsage(usage)
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
	g.host.emit(event.GoalCheck, d)
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
	g.host.enqueue(b.String(), kindGoalCheck)
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
func parseVerdicts(clauses []string, answer string, judged bool) []event.GoalClause {
	var lines []string
	for _, l := range strings.Split(answer, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	out := make([]event.GoalClause, len(clauses))
	for i, c := range clauses {
		out[i] = event.GoalClause{Clause: c, Evidence: "the verdict could not be read"}
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
