package graphtest

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph"
)

// heldOwners says every claim still holds.
type heldOwners struct{}

func (heldOwners) Gone(graph.Ticket) (bool, string) { return false, "" }

// BigRun is a run of n subgoals (3n+5 nodes) in the middle of its work:
// the first half of the subgoals through their gates, one implementing.
func BigRun(tb testing.TB, id string, n int) *graph.Run {
	tb.Helper()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r, err := graph.New(graph.OpenOptions{ID: id, Request: "A large request", Cwd: "/w", Policy: graph.Policy{Engine: "script"}, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	k := 0
	step := func(node string, res *graph.Result, finish bool) {
		k++
		tk := graph.Ticket{PID: 1, Boot: "b", Nonce: fmt.Sprintf("n%d", k)}
		if _, err := r.Claim(node, tk, &graph.Route{Engine: "script", Reason: "run policy: engine script"}, heldOwners{}, now); err != nil {
			tb.Fatal(err)
		}
		if !finish {
			return
		}
		if _, err := r.Finish(node, tk, graph.NodeOutcome{StageOK: true, Result: res, Evidence: tk.Nonce}, now); err != nil {
			tb.Fatal(err)
		}
	}
	subgoals := make([]graph.Subgoal, n)
	for i := range subgoals {
		subgoals[i] = graph.Subgoal{ID: fmt.Sprintf("U%d", i+1), Title: fmt.Sprintf("Part %d of the work", i+1),
			Acceptance: []string{"it works", "it is tested"}}
		if i > 0 && i%5 == 0 {
			subgoals[i].Deps = []string{fmt.Sprintf("U%d", i)}
		}
	}
	step("plan", &graph.Result{Plan: "split it"}, true)
	step("setgoal", &graph.Result{Subgoals: subgoals}, true)
	step("critique", &graph.Result{Verdict: graph.VerdictSound}, true)
	for i := range n / 2 {
		u := subgoals[i].ID
		step("implement:"+u, &graph.Result{Summary: "did it", ChangedFiles: []string{"f.go"}}, true)
		step("test:"+u, &graph.Result{Summary: "tested", Checks: []graph.Check{{Name: "unit", OK: true}}}, true)
		step("gate:"+u, &graph.Result{Verdict: graph.VerdictAccept}, true)
	}
	step("implement:"+subgoals[n/2].ID, nil, false)
	r.TakeEvents()
	return r
}

// Median is the middle of a set of durations.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
