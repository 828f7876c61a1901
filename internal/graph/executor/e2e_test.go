package executor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/drivers"
	"github.com/corral-dev/corral/internal/graph/executor"
	"github.com/corral-dev/corral/internal/graph/graphtest"
	"github.com/corral-dev/corral/internal/graph/route"
	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a supervisor's session manager on the real runner, a graph store
// in its state folder, and an executor over both.
type rig struct {
	m     *supervisor.Manager
	store *store.Store
	x     *executor.Executor
	cwd   string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	m, state := graphtest.Manager(t)
	st, err := store.ForState(state, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{m: m, store: st, x: executor.New(st, drivers.Manager(m), route.New(nil, 0, nil), nil), cwd: graphtest.Repo(t)}
}

func (rg *rig) open(t *testing.T, p graph.Policy) string {
	t.Helper()
	r, err := graph.New(graph.OpenOptions{ID: "r1", Request: "Write a greeting to hello.txt.", Cwd: rg.cwd, Policy: p, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rg.store.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func (rg *rig) run(t *testing.T, node string, want graph.NodeState) graph.Verdict {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, err := rg.x.Run(ctx, "r1", node)
	if err != nil {
		t.Fatalf("run %s: %v", node, err)
	}
	if v.State != want {
		t.Fatalf("run %s: %+v, want state %s", node, v, want)
	}
	return v
}

func (rg *rig) load(t *testing.T) *graph.Run {
	t.Helper()
	r, err := rg.store.Load("r1")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (rg *rig) retry(t *testing.T, target string) *graph.RetryOutcome {
	t.Helper()
	var out *graph.RetryOutcome
	if _, err := rg.store.Update(context.Background(), "r1", func(r *graph.Run) error {
		var err error
		out, err = r.Retry(target, time.Now())
		return err
	}); err != nil {
		t.Fatalf("retry %q: %v", target, err)
	}
	return out
}

// briefing is the first message the node's last session was sent.
func (rg *rig) briefing(t *testing.T, node string) string {
	t.Helper()
	n := rg.load(t).Node(node)
	id := n.Sessions[len(n.Sessions)-1]
	st, err := rg.m.Events(context.Background(), id, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			t.Fatalf("no userMessage in session %s: %v", id, err)
		}
		var e event.Event
		json.Unmarshal(ev.Line, &e)
		if e.Type == event.UserMessage {
			var d event.UserMessageData
			json.Unmarshal(e.Data, &d)
			return d.Text
		}
	}
}

func (rg *rig) happyStart(t *testing.T) {
	t.Helper()
	for _, n := range []string{"plan", "setgoal", "critique"} {
		rg.run(t, n, graph.StatePassed)
	}
}

func TestTheHappyPathCompletes(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("happy"))
	rg.happyStart(t)
	impl := rg.run(t, "implement:U1", graph.StatePassed)
	if impl.Engine != "script" || !impl.StageOK || impl.Verdict != graph.VerdictImplemented {
		t.Errorf("implement verdict %+v", impl)
	}
	rg.run(t, "test:U1", graph.StatePassed)
	gate := rg.run(t, "gate:U1", graph.StatePassed)
	if gate.Verdict != graph.VerdictAccept {
		t.Errorf("gate verdict %+v", gate)
	}
	rg.run(t, "gate:goal", graph.StatePassed)
	rg.run(t, "report", graph.StatePassed)
	r := rg.load(t)
	if r.State != graph.RunComplete || !slices.Equal(r.Outcome.Shipped, []string{"U1"}) {
		t.Fatalf("run %s, outcome %+v", r.State, r.Outcome)
	}
	if got, err := os.ReadFile(filepath.Join(rg.cwd, "hello.txt")); err != nil || string(got) != "Hello from the graph!\n" {
		t.Fatalf("hello.txt: %q %v", got, err)
	}
	// Each node ran as an ordinary session, in the mode its stage says.
	n := r.Node("implement:U1")
	if !slices.Equal(n.ChangedFiles, []string{"hello.txt"}) || len(n.Sessions) != 1 {
		t.Fatalf("implement:U1 %+v", n)
	}
	sess, err := rg.m.Get(context.Background(), n.Sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	if sess.Spec.Engine != "script" || sess.Spec.Mode != "auto" || sess.Spec.Cwd != rg.cwd {
		t.Errorf("implement's session spec %+v", sess.Spec)
	}
	plan, _ := rg.m.Get(context.Background(), r.Node("plan").Sessions[0])
	if plan.Spec.Mode != "readonly" {
		t.Errorf("plan ran in mode %q, want readonly", plan.Spec.Mode)
	}
	// The briefing was built from the run: the plan's handoff reached
	// setgoal.
	if b := rg.briefing(t, "setgoal"); !strings.Contains(b, "Write hello.txt with a greeting") || !strings.Contains(b, "Write a greeting to hello.txt.") {
		t.Errorf("setgoal's briefing lacks the plan or the request:\n%s", b)
	}
	// The result is evidence in the run.
	if res := rg.store.Results(r)("gate:U1"); res == nil || res.Verdict != graph.VerdictAccept {
		t.Errorf("gate:U1's result %+v", res)
	}
}

func TestARejectedSubgoalPassesOnRetryWithTheFeedbackInItsBriefing(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("retry"))
	rg.happyStart(t)
	rg.run(t, "implement:U1", graph.StatePassed)
	rg.run(t, "test:U1", graph.StatePassed)
	g := rg.run(t, "gate:U1", graph.StateRejected)
	if !g.StageOK || g.Verdict != graph.VerdictReject || g.Reason != "the greeting lacks an exclamation of joy" {
		t.Fatalf("gate verdict %+v", g)
	}
	// Nothing downstream treats the rejection as a pass.
	if _, err := rg.x.Run(context.Background(), "r1", "gate:goal"); graph.CodeOf(err) != graph.CodeDepsUnmet {
		t.Fatalf("running gate:goal after a rejection: %v, want deps_unmet", err)
	}
	out := rg.retry(t, "U1")
	if !slices.Equal(out.Created, []string{"implement:U1:2", "test:U1:2", "gate:U1:2"}) {
		t.Fatalf("retry created %v", out.Created)
	}
	rg.run(t, "implement:U1:2", graph.StatePassed)
	brief := rg.briefing(t, "implement:U1:2")
	for _, want := range []string{"attempt 2", "the greeting lacks an exclamation of joy", "gap: no exclamation of joy", "failed check tone: too flat"} {
		if !strings.Contains(brief, want) {
			t.Errorf("the retry's briefing lacks %q:\n%s", want, brief)
		}
	}
	rg.run(t, "test:U1:2", graph.StatePassed)
	rg.run(t, "gate:U1:2", graph.StatePassed)
	rg.run(t, "gate:goal", graph.StatePassed)
	rg.run(t, "report", graph.StatePassed)
	r := rg.load(t)
	if r.State != graph.RunComplete || r.Node("gate:U1").State != graph.StateRejected || !r.Node("gate:U1").Retired {
		t.Fatalf("run %s; the failed attempt: %+v", r.State, r.Node("gate:U1"))
	}
	if got, _ := os.ReadFile(filepath.Join(rg.cwd, "hello.txt")); string(got) != "Hello from the graph, with joy!\n" {
		t.Errorf("hello.txt holds %q", got)
	}
}

func TestABudgetExhaustedSettlesUnreachableAndTheReportIsStillWritten(t *testing.T) {
	rg := newRig(t)
	p := graphtest.Policy("budget")
	p.MaxAttempts = 2
	rg.open(t, p)
	rg.happyStart(t)
	for _, attempt := range []string{"", ":2"} {
		rg.run(t, "implement:U1"+attempt, graph.StatePassed)
		rg.run(t, "test:U1"+attempt, graph.StatePassed)
		rg.run(t, "gate:U1"+attempt, graph.StateRejected)
		out := rg.retry(t, "U1")
		if attempt == "" && out.Settled != "" {
			t.Fatalf("the first retry settled: %+v", out)
		}
		if attempt == ":2" {
			want := []string{"implement:U2", "test:U2", "gate:U2", "gate:goal"}
			if out.Settled != "gate:U1:2" || !slices.Equal(out.Unreachable, want) {
				t.Fatalf("settle %+v, want gate:U1:2 with unreachable %v", out, want)
			}
		}
	}
	// U3 comes only after U1 (after): it runs; U2 needs U1 (deps): it
	// never will.
	if _, err := rg.x.Run(context.Background(), "r1", "implement:U2"); graph.CodeOf(err) != graph.CodeNodeFinished {
		t.Fatalf("running an unreachable node: %v, want node_finished", err)
	}
	rg.run(t, "implement:U3", graph.StatePassed)
	rg.run(t, "test:U3", graph.StatePassed)
	rg.run(t, "gate:U3", graph.StatePassed)
	rg.run(t, "report", graph.StatePassed)
	r := rg.load(t)
	if r.State != graph.RunComplete {
		t.Fatalf("run %s, want complete", r.State)
	}
	o := r.Outcome
	if !slices.Equal(o.Shipped, []string{"U3"}) || len(o.NotShipped) != 2 || o.Goal != "unreachable" || o.Report != "report" {
		t.Fatalf("outcome %+v", o)
	}
	if b := rg.briefing(t, "report"); !strings.Contains(b, "Shipped: U3") || !strings.Contains(b, "Not shipped: U2") {
		t.Errorf("the report's briefing does not name what shipped:\n%s", b)
	}
}

func TestAfterAndDepsPropagateDifferently(t *testing.T) {
	rg := newRig(t)
	p := graphtest.Policy("propagate")
	p.MaxAttempts = 1
	rg.open(t, p)
	rg.happyStart(t)
	v := rg.run(t, "implement:U1", graph.StateFailed)
	if v.StageOK || !strings.Contains(v.Reason, "scripted failure") {
		t.Fatalf("a failed stage: %+v", v)
	}
	// U3 waits for U1's settled outcome, not its success.
	if _, err := rg.x.Run(context.Background(), "r1", "implement:U3"); graph.CodeOf(err) != graph.CodeDepsUnmet {
		t.Fatalf("implement:U3 before U1 settled: %v, want deps_unmet", err)
	}
	out := rg.retry(t, "U1")
	if out.Settled != "implement:U1" || !slices.Equal(out.Unreachable, []string{"test:U1", "gate:U1", "implement:U2", "test:U2", "gate:U2", "gate:goal"}) {
		t.Fatalf("settle %+v", out)
	}
	rg.run(t, "implement:U3", graph.StatePassed)
}

func TestASpecRetryAfterTheCritiqueRejects(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("specretry"))
	rg.run(t, "plan", graph.StatePassed)
	rg.run(t, "setgoal", graph.StatePassed)
	c := rg.run(t, "critique", graph.StateRejected)
	if !c.StageOK || c.Verdict != graph.VerdictUnsound {
		t.Fatalf("critique %+v", c)
	}
	out := rg.retry(t, "")
	if !slices.Equal(out.Created, []string{"setgoal:2", "critique:2"}) {
		t.Fatalf("spec retry created %v", out.Created)
	}
	rg.run(t, "setgoal:2", graph.StatePassed)
	if b := rg.briefing(t, "setgoal:2"); !strings.Contains(b, "problem: U1 has no acceptance a reviewer can check") {
		t.Errorf("setgoal:2's briefing lacks the critique's problems:\n%s", b)
	}
	rg.run(t, "critique:2", graph.StatePassed)
	r := rg.load(t)
	if r.Node("implement:U1").State != graph.StateSkipped || r.SpecVersion != 2 {
		t.Fatalf("the rejected spec's graph: implement:U1 %s, spec version %d", r.Node("implement:U1").State, r.SpecVersion)
	}
	rg.run(t, "implement:U1:2", graph.StatePassed)
}

func TestAGoalGateRejectionReopensAfterTheBlamedSubgoalIsRetried(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("goalblame"))
	rg.happyStart(t)
	for _, u := range []string{"U1", "U2"} {
		rg.run(t, "implement:"+u, graph.StatePassed)
		rg.run(t, "test:"+u, graph.StatePassed)
		rg.run(t, "gate:"+u, graph.StatePassed)
	}
	rg.run(t, "gate:goal", graph.StateRejected)
	out := rg.retry(t, "U2")
	if !slices.Contains(out.Created, "gate:goal:2") {
		t.Fatalf("retry created %v", out.Created)
	}
	for _, n := range []string{"implement:U2:2", "test:U2:2", "gate:U2:2", "gate:goal:2", "report"} {
		rg.run(t, n, graph.StatePassed)
	}
	if r := rg.load(t); r.State != graph.RunComplete || len(r.Outcome.Shipped) != 2 {
		t.Fatalf("run %s outcome %+v", r.State, r.Outcome)
	}
}

func TestRunningANodeWithUnmetDepsIsRefused(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("happy"))
	for node, want := range map[string]graph.Code{"setgoal": graph.CodeDepsUnmet, "critique": graph.CodeDepsUnmet, "nope": graph.CodeUnknownNode} {
		if _, err := rg.x.Run(context.Background(), "r1", node); graph.CodeOf(err) != want {
			t.Errorf("run %s first: %v, want %s", node, err, want)
		}
	}
	if _, err := rg.x.Run(context.Background(), "other", "plan"); graph.CodeOf(err) != graph.CodeUnknownRun {
		t.Errorf("run in an unknown run: %v", err)
	}
	rg.run(t, "plan", graph.StatePassed)
	if _, err := rg.x.Run(context.Background(), "r1", "plan"); graph.CodeOf(err) != graph.CodeNodeFinished {
		t.Errorf("run plan twice: %v, want node_finished", err)
	}
	if n := rg.load(t).Node("setgoal"); len(n.Sessions) != 0 || n.State != graph.StatePending {
		t.Errorf("a refused node was started: %+v", n)
	}
}

// Two callers run one node at the same time, through two executors on one
// store: exactly one runs it. The node's session waits for a person
// (review mode), so the first is still holding it when the second comes.
func TestTwoConcurrentRunsOfOneNodeRunItOnce(t *testing.T) {
	rg := newRig(t)
	p := graphtest.Policy("happy")
	no := false
	sp := p.Stages[graph.StageImplement]
	sp.Mode, sp.Unattended = "review", &no
	p.Stages[graph.StageImplement] = sp
	rg.open(t, p)
	rg.happyStart(t)
	other := executor.New(rg.store, drivers.Manager(rg.m), route.New(nil, 0, nil), nil)
	type result struct {
		v   graph.Verdict
		err error
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, x := range []*executor.Executor{rg.x, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			v, err := x.Run(ctx, "r1", "implement:U1")
			results[i] = result{v, err}
		}()
	}
	wg.Wait()
	var ran, refused int
	var winner *executor.Executor
	for i, r := range results {
		switch {
		case r.err == nil && r.v.NeedsHuman:
			ran++
			winner = []*executor.Executor{rg.x, other}[i]
		case graph.CodeOf(r.err) == graph.CodeNodeRunning:
			refused++
		default:
			t.Errorf("a run ended %+v, %v", r.v, r.err)
		}
	}
	if ran != 1 || refused != 1 {
		t.Fatalf("%d runs, %d refusals; want one of each", ran, refused)
	}
	n := rg.load(t).Node("implement:U1")
	if len(n.Sessions) != 1 {
		t.Fatalf("the node ran in %d sessions", len(n.Sessions))
	}
	// A person reviews the hunk; the winner's next run goes on.
	reply, err := rg.m.Command(context.Background(), n.Sessions[0], command.DecideHunk{HunkID: "h1", Decision: command.DecisionAccept})
	if err != nil || !reply.OK {
		t.Fatalf("accept the hunk: %+v %v", reply, err)
	}
	v, err := winner.Run(context.Background(), "r1", "implement:U1")
	if err != nil || v.State != graph.StatePassed {
		t.Fatalf("resumed run: %+v %v", v, err)
	}
}

func TestAMalformedResultGetsOneFreshAttemptThenFailsWithTheRawText(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("malformed"))
	v := rg.run(t, "plan", graph.StateFailed)
	if v.StageOK || !strings.Contains(v.Reason, "malformed result twice") {
		t.Fatalf("verdict %+v", v)
	}
	r := rg.load(t)
	n := r.Node("plan")
	if len(n.Sessions) != 2 {
		t.Fatalf("%d sessions, want the first and one fresh attempt", len(n.Sessions))
	}
	raw, err := rg.store.ReadEvidence("r1", "plan", n.Evidence, store.RawFile)
	if err != nil || !strings.Contains(string(raw), "Still no block") {
		t.Fatalf("raw text evidence %q %v", raw, err)
	}
}

func TestAMalformedResultFixedOnTheFreshAttempt(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("fixed"))
	rg.run(t, "plan", graph.StatePassed)
	if n := rg.load(t).Node("plan"); len(n.Sessions) != 2 {
		t.Fatalf("%d sessions, want 2", len(n.Sessions))
	}
}

func TestAFalseChangedFileClaimFailsTheNode(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("falseclaim"))
	rg.happyStart(t)
	v := rg.run(t, "implement:U1", graph.StateFailed)
	if !strings.Contains(v.Reason, "docs/never written.md: git shows no change") {
		t.Fatalf("verdict %+v", v)
	}
}

func TestANodeRoutedToSelfIsSubmittedByTheCaller(t *testing.T) {
	rg := newRig(t)
	p := graphtest.Policy("happy")
	p.Stages[graph.StagePlan] = graph.StagePolicy{Engine: graph.Self}
	rg.open(t, p)
	v := rg.run(t, "plan", graph.StateRunning)
	if v.Engine != graph.Self || v.Claim == "" || !strings.Contains(v.Briefing, "Write a greeting to hello.txt.") {
		t.Fatalf("self verdict %+v", v)
	}
	again := rg.run(t, "plan", graph.StateRunning)
	if again.Claim != v.Claim {
		t.Fatalf("a second run of a self node gave another claim")
	}
	if _, err := rg.x.Submit(context.Background(), "r1", "plan", v.Claim, json.RawMessage(`{"summary": 3}`)); graph.CodeOf(err) != graph.CodeBadResult {
		t.Fatalf("a malformed submit: %v, want bad_result", err)
	}
	got, err := rg.x.Submit(context.Background(), "r1", "plan", v.Claim, json.RawMessage(`{"plan": "by hand"}`))
	if err != nil || got.State != graph.StatePassed {
		t.Fatalf("submit: %+v %v", got, err)
	}
	// A late submit under the same claim is recorded, never applied.
	late, err := rg.x.Submit(context.Background(), "r1", "plan", v.Claim, json.RawMessage(`{"plan": "again"}`))
	if err != nil || !late.Superseded || late.State != graph.StatePassed {
		t.Fatalf("late submit: %+v %v", late, err)
	}
	// Submitting a pending node claims it in the same step.
	if _, err := rg.x.Submit(context.Background(), "r1", "critique", "", json.RawMessage(`{"verdict": "sound"}`)); graph.CodeOf(err) != graph.CodeDepsUnmet {
		t.Fatalf("submit critique before setgoal: %v, want deps_unmet", err)
	}
	rg.run(t, "setgoal", graph.StatePassed)
	if v, err := rg.x.Submit(context.Background(), "r1", "critique", "", json.RawMessage(`{"verdict": "sound"}`)); err != nil || v.State != graph.StatePassed {
		t.Fatalf("submit critique: %+v %v", v, err)
	}
}

func TestIsolatedSubgoalsGetWorktreesMergedBeforeTheReport(t *testing.T) {
	rg := newRig(t)
	p := graphtest.Policy("happy")
	p.Isolated, p.Merge = true, true
	rg.open(t, p)
	rg.happyStart(t)
	for _, n := range []string{"implement:U1", "test:U1", "gate:U1", "gate:goal"} {
		rg.run(t, n, graph.StatePassed)
	}
	wt := filepath.Join(rg.store.Dir("r1"), "worktrees", "U1")
	if _, err := os.Stat(filepath.Join(wt, "hello.txt")); err != nil {
		t.Fatalf("the subgoal did not work in its worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rg.cwd, "hello.txt")); err == nil {
		t.Fatal("the subgoal wrote into the run's worktree")
	}
	rg.run(t, "report", graph.StatePassed)
	if got, _ := os.ReadFile(filepath.Join(rg.cwd, "hello.txt")); string(got) != "Hello from the graph!\n" {
		t.Fatalf("after the report's merge hello.txt holds %q", got)
	}
	if b := rg.briefing(t, "report"); !strings.Contains(b, "U1: merged from corral/r1/U1") {
		t.Errorf("the report's briefing does not say what merged:\n%s", b)
	}
}

// A caller that gives up while its node runs releases the claim: the
// session is stopped and the node goes back to pending as it was.
func TestACallerThatGivesUpReleasesTheClaim(t *testing.T) {
	rg := newRig(t)
	rg.open(t, graphtest.Policy("crash"))
	rg.happyStart(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := rg.x.Run(ctx, "r1", "implement:U1")
		done <- err
	}()
	// Give up once the node's session is working on its turn.
	var session string
	for session == "" {
		if n := rg.load(t).Node("implement:U1"); len(n.Sessions) == 1 {
			st, err := rg.m.Get(context.Background(), n.Sessions[0])
			if err == nil && st.Status != nil && st.Status.State == wire.StateWorking {
				session = n.Sessions[0]
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a run whose caller gave up returned no error")
	}
	n := rg.load(t).Node("implement:U1")
	if n.State != graph.StatePending || n.Claim != nil || len(n.Sessions) != 0 {
		t.Fatalf("after the caller left: %+v", n)
	}
	st, err := rg.m.Get(context.Background(), session)
	if err != nil || st.Status == nil || st.Status.State == wire.StateWorking {
		t.Fatalf("the node's session still works: %+v %v", st.Status, err)
	}
}
