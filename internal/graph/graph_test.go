package graph

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// owners is a fake Owners: tickets whose nonce is in gone are gone.
type owners map[string]bool

func (o owners) Gone(t Ticket) (bool, string) {
	if o[t.Nonce] {
		return true, "owner pid is dead"
	}
	return false, ""
}

// driver runs a run by hand in tests.
type driver struct {
	t      *testing.T
	r      *Run
	owners owners
	n      int
}

func open(t *testing.T, p Policy) *driver {
	t.Helper()
	r, err := New(OpenOptions{ID: "r1", Request: "Add a greeting", Cwd: "/w", Policy: p, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	return &driver{t: t, r: r, owners: owners{}}
}

func (d *driver) ticket() Ticket {
	d.n++
	return Ticket{PID: 100, Boot: "b", Nonce: "n" + string(rune('a'+d.n))}
}

// run claims and finishes a node with res (nil: a stage failure).
func (d *driver) run(id string, res *Result) *Node {
	d.t.Helper()
	tk := d.ticket()
	if _, err := d.r.Claim(id, tk, &Route{Engine: "script"}, d.owners, t0); err != nil {
		d.t.Fatalf("claim %s: %v", id, err)
	}
	o := NodeOutcome{StageOK: res != nil, Result: res, Reason: "engine failed"}
	n, err := d.r.Finish(id, tk, o, t0.Add(time.Duration(d.n)*time.Second))
	if err != nil {
		d.t.Fatalf("finish %s: %v", id, err)
	}
	return n
}

func (d *driver) ready() []string {
	var ids []string
	for _, n := range d.r.ReadyNodes() {
		ids = append(ids, n.ID)
	}
	return ids
}

func (d *driver) wantReady(want ...string) {
	d.t.Helper()
	if got := d.ready(); !slices.Equal(got, want) {
		d.t.Fatalf("ready %v, want %v", got, want)
	}
}

func (d *driver) state(id string) NodeState {
	d.t.Helper()
	n := d.r.Node(id)
	if n == nil {
		d.t.Fatalf("no node %s", id)
	}
	return n.State
}

var (
	planned  = &Result{Plan: "do it"}
	sound    = &Result{Verdict: VerdictSound}
	unsound  = &Result{Verdict: VerdictUnsound, Problems: []string{"U1 has no acceptance"}}
	done     = &Result{Summary: "changed it"}
	tested   = &Result{Summary: "ran tests", Checks: []Check{{Name: "go test", OK: true}}}
	accept   = &Result{Verdict: VerdictAccept}
	reject   = &Result{Verdict: VerdictReject, Reason: "greeting is misspelt", Gaps: []string{"spelling"}}
	verified = &Result{Verdict: VerdictVerified}
	reported = &Result{Report: "# Report"}
)

func spec(sgs ...Subgoal) *Result { return &Result{Subgoals: sgs} }

func sg(id string, deps, after []string) Subgoal {
	return Subgoal{ID: id, Title: "do " + id, Acceptance: []string{id + " works"}, Deps: deps, After: after}
}

func errCode(t *testing.T, err error, want Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", want)
	}
	if got := CodeOf(err); got != want {
		t.Fatalf("error %v (code %s), want code %s", err, got, want)
	}
}

func TestOpenStartsWithPlanSetgoalCritique(t *testing.T) {
	d := open(t, Policy{})
	var ids []string
	for _, n := range d.r.Nodes {
		ids = append(ids, n.ID)
	}
	if want := []string{"plan", "setgoal", "critique"}; !slices.Equal(ids, want) {
		t.Fatalf("nodes %v, want %v", ids, want)
	}
	d.wantReady("plan")
}

func TestOpenRefusesBadInput(t *testing.T) {
	for name, o := range map[string]OpenOptions{
		"bad id":       {ID: "../x", Request: "r", Cwd: "/w"},
		"no request":   {ID: "r", Request: "  ", Cwd: "/w"},
		"relative cwd": {ID: "r", Request: "r", Cwd: "w"},
		"bad mode":     {ID: "r", Request: "r", Cwd: "/w", Policy: Policy{Stages: map[Stage]StagePolicy{StagePlan: {Mode: "yolo"}}}},
		"bad stage":    {ID: "r", Request: "r", Cwd: "/w", Policy: Policy{Stages: map[Stage]StagePolicy{"deploy": {}}}},
		"self with candidates": {ID: "r", Request: "r", Cwd: "/w",
			Policy: Policy{Engine: Self, Candidates: []Candidate{{Engine: "codex"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(o)
			errCode(t, err, CodeBadRequest)
		})
	}
}

func TestRunningOrSubmittingOutOfOrderIsRefused(t *testing.T) {
	d := open(t, Policy{})
	_, err := d.r.Claim("setgoal", d.ticket(), nil, d.owners, t0)
	errCode(t, err, CodeDepsUnmet)
	if !strings.Contains(err.Error(), "plan (pending)") {
		t.Errorf("the refusal does not name the unmet edge: %v", err)
	}
	_, err = d.r.Claim("deploy", d.ticket(), nil, d.owners, t0)
	errCode(t, err, CodeUnknownNode)
	d.run("plan", planned)
	_, err = d.r.Claim("plan", d.ticket(), nil, d.owners, t0)
	errCode(t, err, CodeNodeFinished)
}

func TestSetgoalDerivesPerSubgoalNodesAndEdges(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil), sg("U2", []string{"U1"}, nil), sg("U3", nil, []string{"U1"})))
	want := map[string][2][]string{ // deps, after
		"implement:U1": {{"critique"}, nil},
		"test:U1":      {{"implement:U1"}, nil},
		"gate:U1":      {{"test:U1"}, nil},
		"implement:U2": {{"critique", "gate:U1"}, nil},
		"implement:U3": {{"critique"}, {"gate:U1"}},
		"gate:goal":    {{"gate:U1", "gate:U2", "gate:U3"}, nil},
		"report":       {nil, {"gate:goal"}},
	}
	for id, e := range want {
		n := d.r.Node(id)
		if n == nil {
			t.Fatalf("no node %s", id)
		}
		if !slices.Equal(n.Deps, e[0]) || !slices.Equal(n.After, e[1]) {
			t.Errorf("%s: deps %v after %v, want %v %v", id, n.Deps, n.After, e[0], e[1])
		}
	}
	if len(d.r.Nodes) != 3+9+2 {
		t.Errorf("%d nodes, want 14", len(d.r.Nodes))
	}
	d.wantReady("critique")
}

func TestBadSpecsAreMalformedResults(t *testing.T) {
	for name, tc := range map[string]struct {
		sgs  []Subgoal
		want string
	}{
		"none":          {nil, "no subgoals"},
		"self deps":     {[]Subgoal{sg("U1", []string{"U1"}, nil)}, "lists itself"},
		"self after":    {[]Subgoal{sg("U1", nil, []string{"U1"})}, "lists itself"},
		"dangling":      {[]Subgoal{sg("U1", []string{"U9"}, nil)}, "not a subgoal"},
		"cycle":         {[]Subgoal{sg("U1", []string{"U2"}, nil), sg("U2", nil, []string{"U3"}), sg("U3", []string{"U1"}, nil)}, "cycle"},
		"duplicate id":  {[]Subgoal{sg("U1", nil, nil), sg("U1", nil, nil)}, "twice"},
		"colon in id":   {[]Subgoal{sg("U:1", nil, nil)}, "want a letter"},
		"reserved id":   {[]Subgoal{sg("report", nil, nil)}, "reserved"},
		"both edges":    {[]Subgoal{sg("U1", nil, nil), sg("U2", []string{"U1"}, []string{"U1"})}, "twice"},
		"missing title": {[]Subgoal{{ID: "U1"}}, "no title"},
	} {
		t.Run(name, func(t *testing.T) {
			d := open(t, Policy{})
			d.run("plan", planned)
			err := d.r.CheckResult(d.r.Node("setgoal"), spec(tc.sgs...))
			errCode(t, err, CodeBadResult)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestHappyPathCompletesWithAnAccount(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil)))
	d.run("critique", sound)
	d.run("implement:U1", done)
	d.run("test:U1", tested)
	d.run("gate:U1", accept)
	d.wantReady("gate:goal")
	d.run("gate:goal", verified)
	d.wantReady("report")
	d.run("report", reported)
	if d.r.State != RunComplete {
		t.Fatalf("run %s, want complete", d.r.State)
	}
	if o := d.r.Outcome; !slices.Equal(o.Shipped, []string{"U1"}) || len(o.NotShipped) != 0 || o.Goal != VerdictVerified || o.Report != "report" {
		t.Fatalf("outcome %+v", o)
	}
	d.wantReady()
}

func TestJudgesCanFailWithStageOK(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil)))
	n := d.run("critique", unsound)
	if n.State != StateRejected || !n.StageOK || n.Verdict != VerdictUnsound {
		t.Fatalf("critique %s stageOk=%v verdict %s", n.State, n.StageOK, n.Verdict)
	}
	if n.Reason != "problem: U1 has no acceptance" {
		t.Errorf("reason %q, want one built from the problems", n.Reason)
	}
	// Nothing downstream treats the rejection as a pass.
	d.wantReady()
	_, err := d.r.Claim("implement:U1", d.ticket(), nil, d.owners, t0)
	errCode(t, err, CodeDepsUnmet)
}

func TestAGateMayNotAcceptOverFailedTests(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil)))
	d.run("critique", sound)
	d.run("implement:U1", done)
	d.run("test:U1", &Result{Summary: "ran", Checks: []Check{{Name: "unit", OK: true}, {Name: "lint", OK: false, Detail: "unused var"}}})
	g := d.run("gate:U1", accept)
	if g.State != StateRejected || g.Verdict != VerdictReject || !strings.Contains(g.Reason, "lint") {
		t.Fatalf("gate %s %s %q: an accept over failed tests must be a rejection", g.State, g.Verdict, g.Reason)
	}
}

func TestARejectionWithoutAReasonGetsOneFromItsChecks(t *testing.T) {
	for name, tc := range map[string]struct {
		res  *Result
		want string
	}{
		"checks":   {&Result{Verdict: VerdictReject, Checks: []Check{{Name: "e2e", Detail: "timeout"}}}, "check e2e failed: timeout"},
		"gaps":     {&Result{Verdict: VerdictReject, Gaps: []string{"no docs"}}, "gap: no docs"},
		"evidence": {&Result{Verdict: VerdictReject, Evidence: []string{"exit 1"}}, "evidence: exit 1"},
		"nothing":  {&Result{Verdict: VerdictReject}, "without a reason"},
	} {
		t.Run(name, func(t *testing.T) {
			d := open(t, Policy{})
			d.run("plan", planned)
			d.run("setgoal", spec(sg("U1", nil, nil)))
			d.run("critique", sound)
			d.run("implement:U1", done)
			d.run("test:U1", tested)
			if g := d.run("gate:U1", tc.res); !strings.Contains(g.Reason, tc.want) {
				t.Fatalf("reason %q, want %q", g.Reason, tc.want)
			}
		})
	}
}

func TestARejectedSubgoalGetsANewAttemptWithFeedback(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil), sg("U2", []string{"U1"}, nil)))
	d.run("critique", sound)
	d.run("implement:U1", done)
	d.run("test:U1", tested)
	d.run("gate:U1", reject)
	d.wantReady()
	st := StatusOf(d.r, t0)
	if len(st.Blocked) != 1 || st.Blocked[0].Node != "gate:U1" || *st.Blocked[0].Retry != "U1" {
		t.Fatalf("blocked %+v, want gate:U1 with retry U1", st.Blocked)
	}
	out, err := d.r.Retry("U1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"implement:U1:2", "test:U1:2", "gate:U1:2"}; !slices.Equal(out.Created, want) {
		t.Fatalf("created %v, want %v", out.Created, want)
	}
	// The failed attempt stays as evidence; what waited on it is rewired.
	if g := d.r.Node("gate:U1"); !g.Retired || g.State != StateRejected {
		t.Errorf("old gate %s retired=%v", g.State, g.Retired)
	}
	if n := d.r.Node("implement:U2"); !slices.Contains(n.Deps, "gate:U1:2") {
		t.Errorf("implement:U2 deps %v, want gate:U1:2", n.Deps)
	}
	if n := d.r.Node("gate:goal"); !slices.Equal(n.Deps, []string{"gate:U1:2", "gate:U2"}) {
		t.Errorf("gate:goal deps %v", n.Deps)
	}
	fb := d.r.Node("implement:U1:2").Feedback
	if fb == nil || fb.Reason != "greeting is misspelt" || !slices.Equal(fb.Gaps, []string{"spelling"}) {
		t.Fatalf("feedback %+v", fb)
	}
	brief := Brief(d.r, d.r.Node("implement:U1:2"), func(string) *Result { return nil }, "")
	for _, want := range []string{"attempt 2", "greeting is misspelt", "gap: spelling"} {
		if !strings.Contains(brief, want) {
			t.Errorf("briefing lacks %q:\n%s", want, brief)
		}
	}
	d.wantReady("implement:U1:2")
	d.run("implement:U1:2", done)
	d.run("test:U1:2", tested)
	d.run("gate:U1:2", accept)
	d.wantReady("implement:U2")
}

func TestBudgetExhaustedSettlesUnreachableAndStillReports(t *testing.T) {
	d := open(t, Policy{MaxAttempts: 2})
	d.run("plan", planned)
	// U2 needs U1's work (deps); U3 only comes after it (after).
	d.run("setgoal", spec(sg("U1", nil, nil), sg("U2", []string{"U1"}, nil), sg("U3", nil, []string{"U1"})))
	d.run("critique", sound)
	d.run("implement:U1", nil) // the stage fails
	if _, err := d.r.Retry("U1", t0); err != nil {
		t.Fatal(err)
	}
	d.run("implement:U1:2", done)
	d.run("test:U1:2", tested)
	d.run("gate:U1:2", reject)
	out, err := d.r.Retry("U1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Settled != "gate:U1:2" || len(out.Created) != 0 {
		t.Fatalf("retry outcome %+v, want a settle of gate:U1:2", out)
	}
	wantGone := []string{"implement:U2", "test:U2", "gate:U2", "gate:goal"}
	if !slices.Equal(out.Unreachable, wantGone) {
		t.Fatalf("unreachable %v, want %v", out.Unreachable, wantGone)
	}
	if n := d.r.Node("gate:goal"); !strings.Contains(n.Reason, "needs gate:U1:2, which was rejected for good") {
		t.Errorf("gate:goal reason %q", n.Reason)
	}
	// after does not carry the failure: U3 runs; the report is ready.
	d.wantReady("implement:U3", "report")
	d.run("implement:U3", done)
	d.run("test:U3", tested)
	d.run("gate:U3", accept)
	d.run("report", reported)
	if d.r.State != RunComplete {
		t.Fatalf("run %s, want complete", d.r.State)
	}
	o := d.r.Outcome
	if !slices.Equal(o.Shipped, []string{"U3"}) || len(o.NotShipped) != 2 || o.Goal != string(StateUnreachable) {
		t.Fatalf("outcome %+v", o)
	}
	if m := o.NotShipped[0]; m.Subgoal != "U1" || m.State != StateRejected {
		t.Errorf("U1 not shipped as %+v", m)
	}
	if m := o.NotShipped[1]; m.Subgoal != "U2" || m.State != StateUnreachable {
		t.Errorf("U2 not shipped as %+v", m)
	}
}

func TestASpecRetryAfterTheCritiqueRejects(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil)))
	d.run("critique", unsound)
	out, err := d.r.Retry(TargetSpec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"setgoal:2", "critique:2"}; !slices.Equal(out.Created, want) {
		t.Fatalf("created %v, want %v", out.Created, want)
	}
	for _, id := range []string{"implement:U1", "test:U1", "gate:U1", "gate:goal", "report"} {
		if s := d.state(id); s != StateSkipped {
			t.Errorf("%s is %s, want skipped", id, s)
		}
	}
	if d.r.Spec != nil {
		t.Errorf("the rejected spec is still live")
	}
	if fb := d.r.Node("setgoal:2").Feedback; fb == nil || !slices.Equal(fb.Problems, []string{"U1 has no acceptance"}) {
		t.Fatalf("setgoal:2 feedback %+v", fb)
	}
	d.wantReady("setgoal:2")
	d.run("setgoal:2", spec(sg("U1", nil, nil), sg("U2", nil, nil)))
	d.run("critique:2", sound)
	d.wantReady("implement:U1:2", "implement:U2")
	if g := d.r.Node("gate:goal:2"); g == nil || !slices.Equal(g.Deps, []string{"gate:U1:2", "gate:U2"}) {
		t.Fatalf("gate:goal:2 %+v", g)
	}
}

func TestAGoalGateRejectionReopensOverTheLiveGates(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil), sg("U2", nil, nil)))
	d.run("critique", sound)
	for _, u := range []string{"U1", "U2"} {
		d.run("implement:"+u, done)
		d.run("test:"+u, tested)
		d.run("gate:"+u, accept)
	}
	d.run("gate:goal", &Result{Verdict: VerdictUnverified, Reason: "U2 breaks U1", Blame: []string{"U2"}})
	d.wantReady() // report waits: the rejection is not final yet
	_, err := d.r.Retry("U1", t0)
	errCode(t, err, CodeNothingRetry)
	out, err := d.r.Retry("U2", t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"implement:U2:2", "test:U2:2", "gate:U2:2", "gate:goal:2"}; !slices.Equal(out.Created, want) {
		t.Fatalf("created %v, want %v", out.Created, want)
	}
	if g := d.r.Node("gate:goal:2"); !slices.Equal(g.Deps, []string{"gate:U1", "gate:U2:2"}) {
		t.Fatalf("gate:goal:2 deps %v", g.Deps)
	}
	if rep := d.r.Node("report"); !slices.Equal(rep.After, []string{"gate:goal:2"}) {
		t.Fatalf("report after %v", rep.After)
	}
	d.run("implement:U2:2", done)
	d.run("test:U2:2", tested)
	d.run("gate:U2:2", accept)
	d.run("gate:goal:2", verified)
	d.run("report", reported)
	if d.r.State != RunComplete || !slices.Equal(d.r.Outcome.Shipped, []string{"U1", "U2"}) {
		t.Fatalf("run %s outcome %+v", d.r.State, d.r.Outcome)
	}
}

func TestAfterWaitsForAFailureToSettle(t *testing.T) {
	d := open(t, Policy{MaxAttempts: 1})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil), sg("U2", nil, []string{"U1"})))
	d.run("critique", sound)
	d.wantReady("implement:U1")
	d.run("implement:U1", nil)
	d.wantReady() // U2 comes after U1's settled outcome, and U1 may yet be retried
	out, err := d.r.Retry("U1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Settled != "implement:U1" || !slices.Equal(out.Unreachable, []string{"test:U1", "gate:U1", "gate:goal"}) {
		t.Fatalf("settle %+v", out)
	}
	d.wantReady("implement:U2", "report")
}

func TestASpecNeverProducedBlocksTheRun(t *testing.T) {
	d := open(t, Policy{MaxAttempts: 2})
	d.run("plan", nil)
	if _, err := d.r.Retry(TargetSpec, t0); err != nil {
		t.Fatal(err)
	}
	d.wantReady("plan:2")
	d.run("plan:2", nil)
	out, err := d.r.Retry(TargetSpec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if d.r.State != RunBlocked || out.Settled != "plan:2" {
		t.Fatalf("run %s after %+v, want blocked", d.r.State, out)
	}
	_, err = d.r.Retry(TargetSpec, t0)
	errCode(t, err, CodeRunEnded)
}

func TestACritiqueRejectedForGoodStillReports(t *testing.T) {
	d := open(t, Policy{MaxAttempts: 1})
	d.run("plan", planned)
	d.run("setgoal", spec(sg("U1", nil, nil)))
	d.run("critique", unsound)
	if _, err := d.r.Retry(TargetSpec, t0); err != nil {
		t.Fatal(err)
	}
	d.wantReady("report")
	d.run("report", reported)
	if d.r.State != RunComplete || len(d.r.Outcome.Shipped) != 0 {
		t.Fatalf("run %s outcome %+v", d.r.State, d.r.Outcome)
	}
}

func TestClaimsAndTickets(t *testing.T) {
	d := open(t, Policy{})
	live := Ticket{PID: 1, Boot: "b", Nonce: "live"}
	prior, err := d.r.Claim("plan", live, &Route{Engine: "script"}, d.owners, t0)
	if err != nil {
		t.Fatal(err)
	}
	if prior.State != StatePending {
		t.Fatalf("prior state %s", prior.State)
	}
	// A second run of the same node is refused while its owner lives.
	_, err = d.r.Claim("plan", Ticket{PID: 2, Boot: "b", Nonce: "other"}, nil, d.owners, t0)
	errCode(t, err, CodeNodeRunning)
	// Once the owner is gone the node is reclaimed...
	d.owners["live"] = true
	next := Ticket{PID: 2, Boot: "b", Nonce: "next"}
	if _, err := d.r.Claim("plan", next, &Route{Engine: "script"}, d.owners, t0); err != nil {
		t.Fatal(err)
	}
	// ...and the old owner's late result is recorded, never applied.
	_, err = d.r.Finish("plan", live, NodeOutcome{StageOK: true, Result: planned}, t0)
	errCode(t, err, CodeSuperseded)
	n := d.r.Node("plan")
	if n.State != StateRunning || len(n.Superseded) != 1 || n.Superseded[0].What != "result" {
		t.Fatalf("plan %s superseded %+v", n.State, n.Superseded)
	}
	err = d.r.Release("plan", live, prior, "late interruption", t0)
	errCode(t, err, CodeSuperseded)
	// A release by the holder restores the node as it was.
	if err := d.r.AddSession("plan", next, "s1", t0); err != nil {
		t.Fatal(err)
	}
	if err := d.r.Release("plan", next, prior, "the caller gave up", t0); err != nil {
		t.Fatal(err)
	}
	n = d.r.Node("plan")
	if n.State != StatePending || n.Claim != nil || len(n.Sessions) != 0 || len(n.Superseded) != 2 {
		t.Fatalf("released plan: %+v", n)
	}
	d.wantReady("plan")
}

func TestEventsRecordEveryChange(t *testing.T) {
	d := open(t, Policy{})
	d.run("plan", planned)
	var types []string
	for _, e := range d.r.TakeEvents() {
		types = append(types, e.Type)
	}
	if want := []string{EvRunOpened, EvNodeClaimed, EvNodeFinished}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if len(d.r.TakeEvents()) != 0 {
		t.Fatal("TakeEvents did not forget")
	}
}

func TestErrorsMatchWireClasses(t *testing.T) {
	err := Errorf(CodeDepsUnmet, "x")
	if !errors.Is(err, &Error{Code: CodeDepsUnmet}) {
		t.Error("an *Error does not match its code")
	}
	if err.WireCode() != "conflict" {
		t.Errorf("deps_unmet maps to %s", err.WireCode())
	}
}
