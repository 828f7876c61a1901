package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// policyDouble is the session as a policy under test sees it.
type policyDouble struct {
	emitted
	sp     wire.Spec
	isBusy bool
	queued []string // kind: text
	usage  []event.UsageData
}

func (h *policyDouble) spec() wire.Spec               { return h.sp }
func (h *policyDouble) engineUsage(u event.UsageData) { h.usage = append(h.usage, u) }
func (h *policyDouble) enqueue(text, kind string)     { h.queued = append(h.queued, kind+": "+text) }
func (h *policyDouble) busy() bool                    { return h.isBusy }

// compactingEngine can compact; err is what Compact returns.
type compactingEngine struct {
	*fakeEngine
	err   error
	calls int
}

func (e *compactingEngine) Compact(context.Context) error {
	e.calls++
	return e.err
}

// judgingEngine answers goal checks with answer.
type judgingEngine struct {
	*fakeEngine
	answer string
	usage  event.UsageData
}

func (e judgingEngine) Judge(context.Context, string) (string, event.UsageData, error) {
	return e.answer, e.usage, nil
}

func TestCompactionAtTheEndOfATurn(t *testing.T) {
	cases := []struct {
		name      string
		outcome   string
		compactAt float64
		fill      float64
		err       error
		plain     bool // the engine cannot compact
		compacted bool
		failure   string
	}{
		{"below the threshold", "done", 0, 94, nil, false, false, ""},
		{"full", "done", 0, 95, nil, false, true, ""},
		{"a threshold of the session's", "done", 50, 60, nil, false, true, ""},
		{"after a stopped turn", "stopped", 0, 99, nil, false, false, ""},
		{"the engine cannot compact", "done", 0, 99, nil, true, false, "cannot compact"},
		{"compaction fails", "done", 0, 99, errors.New("no room"), false, false, "compaction failed: no room"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &policyDouble{sp: wire.Spec{CompactAt: c.compactAt}}
			p := &compaction{host: h}
			p.observe(c.fill)
			eng := &compactingEngine{fakeEngine: &fakeEngine{}, err: c.err}
			end := turnEnd{outcome: c.outcome, eng: eng}
			if c.plain {
				end.eng = eng.fakeEngine
			}
			p.afterTurn(context.Background(), end)
			compacted := of[event.CompactedData](&h.emitted, event.Compacted)
			failures := of[event.FailureData](&h.emitted, event.Failure)
			if (len(compacted) == 1) != c.compacted || len(compacted) > 1 {
				t.Fatalf("compacted events %+v", compacted)
			}
			if c.failure == "" && len(failures) > 0 || c.failure != "" && (len(failures) != 1 ||
				failures[0].Code != event.FailContextFull || !strings.Contains(failures[0].Message, c.failure)) {
				t.Fatalf("failures %+v, want %q", failures, c.failure)
			}
			if c.compacted {
				// The fill starts again from nothing.
				p.afterTurn(context.Background(), end)
				if eng.calls != 1 {
					t.Fatalf("compacted %d times", eng.calls)
				}
			}
		})
	}
}

func TestGoalCheckAtTheEndOfATurn(t *testing.T) {
	const twoClauses = "the file exists; tests pass"
	cases := []struct {
		name     string
		goal     *wire.Goal
		limit    int
		outcome  string
		busy     bool
		noJudge  bool
		answer   string
		checks   int
		holds    bool
		limitHit bool
		queued   string
	}{
		{"no goal", nil, 0, "done", false, false, "", 0, false, false, ""},
		{"goal done", &wire.Goal{Text: twoClauses, Done: true}, 0, "done", false, false, "", 0, false, false, ""},
		{"after a failed turn", &wire.Goal{Text: twoClauses}, 0, "failed", false, false, "", 0, false, false, ""},
		{"something comes first", &wire.Goal{Text: twoClauses}, 0, "done", true, false, "", 0, false, false, ""},
		{"holds", &wire.Goal{Text: twoClauses}, 0, "done", false, false,
			"MET: the file exists — ls\nMET: tests pass — go test", 1, true, false, ""},
		{"unmet", &wire.Goal{Text: twoClauses}, 0, "done", false, false,
			"MET: the file exists — ls\nUNMET: tests pass — not run", 1, false, false, "goalCheck: Goal check: these parts of the goal are not met yet:\n- tests pass (evidence: not run)\nKeep working until they hold."},
		{"unmet at the limit", &wire.Goal{Text: twoClauses}, 1, "done", false, false,
			"UNMET: the file exists — no\nUNMET: tests pass — no", 1, false, true, ""},
		{"the engine cannot judge", &wire.Goal{Text: twoClauses}, 0, "done", false, true, "", 1, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &policyDouble{sp: wire.Spec{Goal: c.goal, GoalLimit: c.limit}, isBusy: c.busy}
			g := &goalPolicy{host: h, log: zap.NewNop()}
			eng := judgingEngine{fakeEngine: &fakeEngine{}, answer: c.answer, usage: event.UsageData{InputTokens: 5, CostUSD: 0.01}}
			end := turnEnd{outcome: c.outcome, eng: eng}
			if c.noJudge {
				end.eng = eng.fakeEngine
			}
			g.afterTurn(context.Background(), end)
			checks := of[event.GoalCheckData](&h.emitted, event.GoalCheck)
			if len(checks) != c.checks {
				t.Fatalf("%d goalCheck events, want %d", len(checks), c.checks)
			}
			if c.checks == 0 {
				return
			}
			d := checks[0]
			if d.Holds != c.holds || d.LimitReached != c.limitHit || d.Total != 2 || d.Attempt != 1 {
				t.Fatalf("goalCheck %+v", d)
			}
			if got := strings.Join(h.queued, "|"); got != c.queued {
				t.Fatalf("queued %q, want %q", got, c.queued)
			}
			if c.noJudge != (len(h.usage) == 0) {
				t.Fatalf("judge usage recorded: %+v", h.usage)
			}
		})
	}
}

func TestGoalChecksInARowCountUntilReset(t *testing.T) {
	h := &policyDouble{sp: wire.Spec{Goal: &wire.Goal{Text: "tests pass"}, GoalLimit: 3}}
	g := &goalPolicy{host: h, log: zap.NewNop()}
	end := turnEnd{outcome: "done", eng: judgingEngine{fakeEngine: &fakeEngine{}, answer: "UNMET: tests pass — no"}}
	for range 2 {
		g.afterTurn(context.Background(), end)
	}
	if g.attemptsSoFar() != 2 || len(h.queued) != 2 {
		t.Fatalf("after two checks: %d attempts, %d queued", g.attemptsSoFar(), len(h.queued))
	}
	g.reset()
	g.afterTurn(context.Background(), end)
	if d := of[event.GoalCheckData](&h.emitted, event.GoalCheck)[2]; d.Attempt != 1 || d.LimitReached {
		t.Fatalf("the check after a reset: %+v", d)
	}
}

func TestSpendCapPolicyReportsTheExactCostAtTheCap(t *testing.T) {
	h := &policyDouble{}
	m := newMeter(1)
	p := spendCapPolicy{meter: m, host: h}
	m.beginTurn()
	m.add(event.UsageData{CostUSD: 0.5, Estimated: true})
	m.endTurn(&event.UsageData{CostUSD: 1.25})
	p.afterTurn(context.Background(), turnEnd{outcome: "done"})
	p.afterTurn(context.Background(), turnEnd{outcome: "done"})
	failures := of[event.FailureData](&h.emitted, event.Failure)
	if len(failures) != 1 || failures[0].Code != event.FailSpendCap || !m.reached() {
		t.Fatalf("failures %+v, cap reached %v", failures, m.reached())
	}
}
