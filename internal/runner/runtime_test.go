package runner

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestClauses(t *testing.T) {
	cases := []struct {
		goal string
		want []string
	}{
		{"hello.txt exists", []string{"hello.txt exists"}},
		{"hello.txt exists; it holds a greeting", []string{"hello.txt exists", "it holds a greeting"}},
		{"- tests pass\n- lint is clean\n", []string{"tests pass", "lint is clean"}},
		{"Build it. Test it.", []string{"Build it", "Test it"}},
		{"1. one\n2) two", []string{"one", "two"}},
		{"read and summarise the file", []string{"read and summarise the file"}},
		{"  \n ; ", nil},
	}
	for _, c := range cases {
		if got := Clauses(c.goal); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Clauses(%q) = %q, want %q", c.goal, got, c.want)
		}
	}
}

func TestParseVerdicts(t *testing.T) {
	clauses := []string{"a", "b", "c", "d"}
	answer := "MET: a — the file exists\nUNMET: b - nothing shows it\nprobably?\n"
	got := parseVerdicts(clauses, answer, true)
	want := []event.GoalClause{
		{Clause: "a", Met: true, Evidence: "the file exists"},
		{Clause: "b", Met: false, Evidence: "nothing shows it"},
		{Clause: "c", Met: false, Evidence: "the verdict could not be read: probably?"},
		{Clause: "d", Met: false, Evidence: "the verdict could not be read"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

const goalScenario = `
turns:
  - steps:
      - say: "working"
goals:
  - match: "file exists"
    met: true
    evidence: "ls shows it"
  - match: "tests pass"
    met: false
    evidence: "no test run yet"
  - match: "garbled"
    garbled: true
fallback:
  steps:
    - say: "still working"
`

func goalChecks(t *testing.T, s *session) []event.GoalCheckData {
	var out []event.GoalCheckData
	for _, ev := range s.all(event.GoalCheck) {
		out = append(out, decode[event.GoalCheckData](t, ev))
	}
	return out
}

func TestGoalMet(t *testing.T) {
	s := newSession(t, goalScenario, nil)
	s.do(command.SetGoal{Goal: "the file exists"})
	s.do(command.Send{Text: "go"})
	ev, _ := s.waitType(0, event.GoalCheck)
	d := decode[event.GoalCheckData](t, ev)
	if !d.Holds || d.Summary != "holds · 1/1" || d.Clauses[0].Evidence != "ls shows it" {
		t.Fatalf("goal check %+v", d)
	}
	s.r.Flush()
	if n := len(s.all(event.TurnStarted)); n != 1 {
		t.Fatalf("a met goal queued more turns: %d turns", n)
	}
}

func TestGoalUnmetLoopsUpToTheLimit(t *testing.T) {
	s := newSession(t, goalScenario, func(sp *wire.Spec) { sp.GoalLimit = 3 })
	s.do(command.SetGoal{Goal: "the file exists; tests pass"})
	s.do(command.Send{Text: "go"})
	s.waitFor(0, "goalCheck with limitReached", func(ev event.Event) bool {
		return ev.Type == event.GoalCheck && strings.Contains(string(ev.Data), `"limitReached":true`)
	})
	checks := goalChecks(t, s)
	if len(checks) != 3 {
		t.Fatalf("%d goal checks, want 3", len(checks))
	}
	for i, c := range checks {
		if c.Holds || c.Met != 1 || c.Total != 2 || c.Attempt != i+1 {
			t.Fatalf("check %d: %+v", i, c)
		}
	}
	starts := s.all(event.TurnStarted)
	if len(starts) != 3 {
		t.Fatalf("%d turns, want 1 + 2 goal-check turns", len(starts))
	}
	follow := decode[event.TurnStartedData](t, starts[1])
	if !strings.Contains(follow.Text, "tests pass (evidence: no test run yet)") || strings.Contains(follow.Text, "file exists") {
		t.Fatalf("goal-check turn names the wrong clauses: %q", follow.Text)
	}
}

func TestUnreadableVerdictCountsAsUnmet(t *testing.T) {
	s := newSession(t, goalScenario, func(sp *wire.Spec) { sp.GoalLimit = 1 })
	s.do(command.SetGoal{Goal: "garbled clause"})
	s.do(command.Send{Text: "go"})
	ev, _ := s.waitType(0, event.GoalCheck)
	d := decode[event.GoalCheckData](t, ev)
	if d.Holds || !strings.Contains(d.Clauses[0].Evidence, "could not be read") || !d.LimitReached {
		t.Fatalf("goal check %+v", d)
	}
}

func TestMarkGoalDoneStopsChecks(t *testing.T) {
	s := newSession(t, goalScenario, nil)
	s.do(command.SetGoal{Goal: "tests pass"})
	s.do(command.MarkGoalDone{})
	s.do(command.Send{Text: "go"})
	s.waitType(0, event.TurnEnded)
	s.r.Flush()
	checks := goalChecks(t, s)
	if len(checks) != 1 || checks[0].By != "user" || !checks[0].Holds {
		t.Fatalf("checks after markGoalDone: %+v", checks)
	}
	got := string(s.do(command.GetGoal{}))
	if !strings.Contains(got, `"done":true`) {
		t.Fatalf("getGoal %s", got)
	}
	s.do(command.ClearGoal{})
	if reply := s.r.Do(t.Context(), command.ClearGoal{}); reply.OK {
		t.Fatal("clearing a cleared goal succeeded")
	}
}

func TestSpendCapStopsTheTurnAndHoldsTheQueue(t *testing.T) {
	sc := `
turns:
  - steps:
      - tool: shell
        command: "ls"
        costUsd: 0.75
      - tool: shell
        command: "pwd"
        costUsd: 0.75
      - say: "never reached"
fallback:
  steps:
    - say: "after raising the cap"
`
	s := newSession(t, sc, func(sp *wire.Spec) { sp.SpendCapUSD = 1 })
	s.do(command.Send{Text: "one"})
	ev, _ := s.waitFor(0, "spendCap failure", func(e event.Event) bool {
		return e.Type == event.Failure && strings.Contains(string(e.Data), `"spendCap"`)
	})
	_ = ev
	ended, _ := s.waitType(0, event.TurnEnded)
	if decode[event.TurnEndedData](t, ended).Outcome != "stopped" {
		t.Fatalf("turn after the cap: %s", ended.Data)
	}
	s.do(command.Send{Text: "two"})
	s.r.Flush()
	if n := len(s.all(event.TurnStarted)); n != 1 {
		t.Fatalf("a turn started past the spend cap")
	}
	raise := 5.0
	s.do(command.SetSpendCap{SpendCapUSD: &raise})
	_, i := s.waitFor(1, "second turn", func(e event.Event) bool {
		return e.Type == event.TurnStarted && strings.Contains(string(e.Data), `"text":"two"`)
	})
	s.waitType(i, event.TurnEnded)
}

func TestCompactionAtContextFill(t *testing.T) {
	sc := `
contextWindow: 2000
systemTokens: 1950
turns:
  - steps:
      - say: "a long answer that fills the tiny context window"
`
	s := newSession(t, sc, nil)
	s.do(command.Send{Text: "go"})
	ev, _ := s.waitType(0, event.Compacted)
	if d := decode[event.CompactedData](t, ev); d.BeforePercent < 95 {
		t.Fatalf("compacted at %.1f%%", d.BeforePercent)
	}
}

// An engine that estimates its cost during a turn and reports the exact
// figure only at the end (as Claude Code does) reaches the cap with that
// figure: the next message waits for the cap to be raised.
func TestSpendCapCountsTheExactCostReportedAtTurnEnd(t *testing.T) {
	eng := &fakeEngine{turn: func(_ context.Context, _ engine.TurnInput, host engine.Host) (engine.TurnResult, error) {
		host.Emit(event.Usage, event.UsageData{InputTokens: 10, CostUSD: 0.5, Estimated: true})
		return engine.TurnResult{HasUsage: true, Usage: event.UsageData{InputTokens: 10, CostUSD: 1.5}}, nil
	}}
	s := &session{t: t, dir: t.TempDir(), cwd: t.TempDir()}
	s.startFake(wire.Spec{ID: "s1", Cwd: s.cwd, SpendCapUSD: 1}, func() engine.Engine { return eng })
	s.do(command.Send{Text: "one"})
	ev, _ := s.waitFor(0, "spendCap failure", func(e event.Event) bool {
		return e.Type == event.Failure && decode[event.FailureData](t, e).Code == event.FailSpendCap
	})
	if f := decode[event.FailureData](t, ev); !strings.Contains(f.Message, "$1.5000 spent") {
		t.Fatalf("failure %+v", f)
	}
	s.do(command.Send{Text: "two"})
	if st := s.r.status(); len(st.Queued) != 1 || st.Usage.CostUSD != 1.5 {
		t.Fatalf("past the cap, status %+v", st)
	}
	raise := 5.0
	s.do(command.SetSpendCap{SpendCapUSD: &raise})
	_, i := s.waitFor(0, "second turn", func(e event.Event) bool {
		return e.Type == event.TurnStarted && decode[event.TurnStartedData](t, e).Text == "two"
	})
	s.waitType(i, event.TurnEnded)
}

// The stop a crossed spend cap starts belongs to the runner: Close waits for
// it (cutting short the engine's interrupt), so its stopped event is in the
// log and no goroutine outlives the runner.
func TestCloseWaitsForTheSpendCapStop(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ended := make(chan struct{})
	var once sync.Once
	eng := &fakeEngine{
		turn: func(ctx context.Context, _ engine.TurnInput, host engine.Host) (engine.TurnResult, error) {
			host.Emit(event.Usage, event.UsageData{CostUSD: 2, Estimated: true})
			select {
			case <-ended:
				return engine.TurnResult{Stopped: true}, nil
			case <-ctx.Done():
				return engine.TurnResult{Stopped: true}, nil
			}
		},
		// The first interrupt ends the turn but answers only when its
		// context ends, as an engine waiting on a slow CLI does.
		interrupt: func(ctx context.Context) error {
			first := false
			once.Do(func() { first = true; close(ended) })
			if first {
				<-ctx.Done()
			}
			return nil
		},
	}
	s := &session{t: t, dir: t.TempDir(), cwd: t.TempDir()}
	s.startFake(wire.Spec{ID: "s1", Cwd: s.cwd, SpendCapUSD: 1}, func() engine.Engine { return eng })
	s.do(command.Send{Text: "one"})
	s.waitType(0, event.TurnEnded)
	if err := s.r.Close(); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	if err := readAll(filepath.Join(s.dir, EventsFile), func(ev event.Event) {
		if ev.Type == event.Stopped {
			reasons = append(reasons, decode[event.StoppedData](t, ev).Reason)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(reasons, "spendCap") {
		t.Fatalf("stops in the log: %q, want one by spendCap", reasons)
	}
}

// What a session spent is in its log, so the spend cap holds across a
// runner's restart (an idle held session is stopped like any idle one):
// the new runner starts held, with the spending the old one counted.
func TestSpendCapHoldsAcrossARestart(t *testing.T) {
	sc := `
turns:
  - steps:
      - {tool: read, path: notes.txt, costUsd: 0.75}
      - {say: "one"}
  - steps:
      - {tool: read, path: notes.txt, costUsd: 0.5}
      - {say: "two"}
fallback: {steps: [{say: "after raising the cap"}]}
`
	capUSD := 1.0
	s := newSession(t, sc, func(sp *wire.Spec) { sp.SpendCapUSD = capUSD })
	s.do(command.Send{Text: "one"})
	_, i := s.waitType(0, event.TurnEnded)
	s.do(command.Send{Text: "two"})
	s.waitFor(i+1, "spendCap failure", func(e event.Event) bool {
		return e.Type == event.Failure && decode[event.FailureData](t, e).Code == event.FailSpendCap
	})
	s.waitFor(i+1, "second turn's end", func(e event.Event) bool { return e.Type == event.TurnEnded })
	spec := s.r.Spec()
	s.r.Flush()
	spent := s.r.status().Usage
	if spent.CostUSD < capUSD {
		t.Fatalf("spent %v, not past the cap", spent.CostUSD)
	}
	if err := s.r.Close(); err != nil {
		t.Fatal(err)
	}

	s.start(spec)
	st := s.r.status()
	if !st.Held || st.Usage != spent {
		t.Fatalf("restarted past the cap: held %v, spent %+v, want held, %+v", st.Held, st.Usage, spent)
	}
	if rep := s.r.stateReport(); !rep.Held {
		t.Fatalf("restarted past the cap, state report %+v", rep)
	}
	s.do(command.Send{Text: "three"})
	s.r.Flush()
	if n := len(s.all(event.TurnStarted)); n != 2 {
		t.Fatalf("%d turns started, a third past the spend cap after a restart", n)
	}
}
