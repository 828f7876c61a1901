package contract

import (
	"encoding/json"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphapi"
)

// heldOwners says every claim of the sample run still holds.
type heldOwners struct{}

func (heldOwners) Gone(graph.Ticket) (bool, string) { return false, "" }

// sampleRun is a graph run in the middle of its work: U1 accepted, U2
// implementing, U3 rejected by its gate.
func sampleRun() *graph.Run {
	r, err := graph.New(graph.OpenOptions{ID: "r1", Request: "Add greetings in three files", Cwd: "/home/me/app",
		Policy: graph.Policy{Engine: "script", MaxAttempts: 2}, Now: ts})
	if err != nil {
		panic(err)
	}
	n := 0
	step := func(id string, res *graph.Result, finish bool) {
		n++
		at := ts.Add(time.Duration(n) * time.Second)
		tk := graph.Ticket{PID: 4242, Start: 1234, Boot: "9f261e13-f2f7-43d0-8e84-f4b0e1b265aa", Nonce: "5e0c9a51e2d4b6a7c8d9e0f" + string(rune('0'+n%10))}
		rt := &graph.Route{Engine: "script", Model: "script-1", Mode: "readonly", Reason: "run policy: engine script", At: at}
		if _, err := r.Claim(id, tk, rt, heldOwners{}, at); err != nil {
			panic(err)
		}
		if err := r.AddSession(id, tk, "3f2a9c0d1e4"+string(rune('0'+n%10)), at); err != nil {
			panic(err)
		}
		if finish {
			if _, err := r.Finish(id, tk, graph.NodeOutcome{StageOK: true, Result: res, Evidence: tk.Nonce, ChangedFiles: res.ChangedFiles}, at); err != nil {
				panic(err)
			}
		}
	}
	step("plan", &graph.Result{Plan: "three files, one each"}, true)
	step("setgoal", &graph.Result{Subgoals: []graph.Subgoal{
		{ID: "U1", Title: "Greeting in one.txt", Acceptance: []string{"one.txt greets"}},
		{ID: "U2", Title: "Greeting in two.txt", Acceptance: []string{"two.txt greets"}, Deps: []string{"U1"}},
		{ID: "U3", Title: "Greeting in three.txt", After: []string{"U1"}}}}, true)
	step("critique", &graph.Result{Verdict: graph.VerdictSound}, true)
	for _, u := range []string{"U1", "U3"} {
		step("implement:"+u, &graph.Result{Summary: "wrote it", ChangedFiles: []string{u + ".txt"}}, true)
		step("test:"+u, &graph.Result{Summary: "tested", Checks: []graph.Check{{Name: "greets", OK: true}}}, true)
		if u == "U1" {
			step("gate:U1", &graph.Result{Verdict: graph.VerdictAccept}, true)
		}
	}
	step("gate:U3", &graph.Result{Verdict: graph.VerdictReject, Reason: "the greeting is flat", Gaps: []string{"no exclamation"}}, true)
	step("implement:U2", nil, false)
	return r
}

// graphSamples are the /v1/graphs routes' bodies and graph events.
func graphSamples(add func(name, def string, v any)) {
	r := sampleRun()
	now := ts.Add(time.Minute)
	st := graph.StatusOf(r, now)
	ready := []graphapi.NextNode{{Node: "implement:U2", Stage: graph.StageImplement, Subgoal: "U2",
		Route: &graph.Route{Engine: "claude", Model: "claude-opus-5-5", Mode: "auto", Reason: "run policy: engine auto, candidates in order: claude probe passed (cached)",
			Probes: []graph.Probe{{Engine: "claude", Model: "claude-opus-5-5", Ready: true, Detail: "ready", Cached: true}}, At: now}}}
	no := false
	add("route.openGraph.request", "OpenRequest", graphapi.OpenRequest{RunID: "r1", Request: "Add greetings in three files", Cwd: "/home/me/app",
		Policy: graph.Policy{Engine: graph.EngineAuto, Model: "sonnet", Candidates: []graph.Candidate{{Engine: "claude"}, {Engine: "codex", Model: "gpt-5.5"}},
			Allocation: graph.AllocationBalanced, MaxAttempts: 2, Isolated: true, Merge: true, SpendCapUSD: 2,
			Models: map[string]map[string]string{"codex": {"opus": "gpt-5.5"}},
			Stages: map[graph.Stage]graph.StagePolicy{graph.StageImplement: {Engine: "codex", Mode: "review", Unattended: &no},
				graph.StagePlan: {Engine: "script", Scenario: "/home/me/plan.yaml"}}}})
	add("route.openGraph.reply", "OpenResponse", graphapi.OpenResponse{OK: true, OpenReply: graphapi.OpenReply{RunID: "r1", State: graph.RunOpen, Ready: ready}})
	add("route.graphs.reply", "StatusResponse", graphapi.StatusResponse{OK: true, StatusReply: graphapi.StatusReply{Runs: []graph.Summary{graph.SummaryOf(r, now)}}})
	add("route.graph.reply", "StatusResponse", graphapi.StatusResponse{OK: true, StatusReply: graphapi.StatusReply{Run: st}})
	add("route.graphNext.reply", "NextResponse", graphapi.NextResponse{OK: true, NextReply: graphapi.NextReply{RunID: "r1", State: graph.RunOpen,
		Ready: ready, Running: st.Now, Blocked: st.Blocked}})
	gate := graph.VerdictOf(r.Node("gate:U3"))
	add("route.runNode.reply", "VerdictResponse", graphapi.VerdictResponse{OK: true, Verdict: &gate})
	human := graph.VerdictOf(r.Node("implement:U2"))
	human.NeedsHuman, human.Session, human.Reason = true, "3f2a9c0d1e4b", "waiting for a person: edit e1 of U2.txt (hunks h1)"
	add("route.runNode.needsHuman", "VerdictResponse", graphapi.VerdictResponse{OK: true, Verdict: &human})
	self := graph.Verdict{NodeID: "report", Stage: graph.StageReport, Engine: graph.Self, State: graph.StateRunning,
		Reason: "run policy: engine self (the caller runs the node and submits its result)", Claim: "5e0c9a51e2d4b6a7c8d9e0f1",
		Briefing: "Corral graph run r1 · node report · stage report\\n\\nYou write the run's report."}
	add("route.runNode.self", "VerdictResponse", graphapi.VerdictResponse{OK: true, Verdict: &self})
	result, _ := json.Marshal(graph.Result{Report: "# Report\n\nU1 shipped; U3 was rejected.", Summary: "one of three shipped"})
	add("route.submitNode.request", "SubmitBody", graphapi.SubmitBody{Claim: "5e0c9a51e2d4b6a7c8d9e0f1", Result: result})
	done := graph.Verdict{NodeID: "report", Stage: graph.StageReport, Engine: graph.Self, State: graph.StatePassed, StageOK: true, Verdict: graph.VerdictReported,
		Reason: "one of three shipped"}
	add("route.submitNode.reply", "VerdictResponse", graphapi.VerdictResponse{OK: true, Verdict: &done})
	add("route.retryGraph.request", "RetryBody", graphapi.RetryBody{Subgoal: "U3"})
	add("route.retryGraph.reply", "RetryResponse", graphapi.RetryResponse{OK: true, RetryReply: graphapi.RetryReply{
		RetryOutcome: graph.RetryOutcome{Target: "U3", Created: []string{"implement:U3:2", "test:U3:2", "gate:U3:2"}, Unreachable: []string{}, Attempt: 2, Budget: 2},
		State:        graph.RunOpen, Ready: []graphapi.NextNode{}}})
	add("route.retryGraph.settled", "RetryResponse", graphapi.RetryResponse{OK: true, RetryReply: graphapi.RetryReply{
		RetryOutcome: graph.RetryOutcome{Target: "U3", Settled: "gate:U3:2", Unreachable: []string{"gate:goal"}, Budget: 2},
		State:        graph.RunOpen, Ready: []graphapi.NextNode{}}})
	for i, e := range r.TakeEvents() {
		e.Seq, e.TS = int64(i+1), ts.Add(time.Duration(i)*time.Millisecond)
		add("route.graphEvents."+e.Type+"."+string(rune('a'+i%26)), "RunEvent", e)
	}
}
