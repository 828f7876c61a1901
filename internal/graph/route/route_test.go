package route

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph"
)

// prober answers from a table and counts its probes.
type prober struct {
	mu    sync.Mutex
	fail  map[string]string
	calls map[string]int
}

func (p *prober) Probe(_ context.Context, t Target) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[t.Engine]++
	if why, ok := p.fail[t.Engine]; ok {
		return errors.New(why)
	}
	return nil
}

func run(t *testing.T, p graph.Policy) (*graph.Run, *graph.Node) {
	t.Helper()
	r, err := graph.New(graph.OpenOptions{ID: "r", Request: "x", Cwd: "/w", Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return r, r.Node("plan")
}

func TestExplicitPolicyWins(t *testing.T) {
	pr := &prober{calls: map[string]int{}}
	rt := New(pr, 0, nil)
	r, n := run(t, graph.Policy{Engine: "auto", Allocation: graph.AllocationBalanced,
		Stages: map[graph.Stage]graph.StagePolicy{graph.StagePlan: {Engine: "codex", Model: "gpt-5.5", Mode: "review"}}})
	got := rt.Route(context.Background(), r, n)
	if got.Engine != "codex" || got.Model != "gpt-5.5" || got.Mode != "review" || !strings.Contains(got.Reason, "stage policy plan: engine codex") {
		t.Fatalf("route %+v", got)
	}
	if pr.calls["codex"] != 0 {
		t.Error("an explicit engine was probed")
	}
}

func TestReasoningStagesAreReadOnlyByDefault(t *testing.T) {
	r, _ := run(t, graph.Policy{Engine: "script"})
	for st, want := range map[graph.Stage]string{graph.StagePlan: "readonly", graph.StageGate: "readonly", graph.StageImplement: "auto", graph.StageTest: "auto"} {
		if got := r.Policy.Stage(st).Mode; got != want {
			t.Errorf("%s mode %s, want %s", st, got, want)
		}
	}
}

func TestAutoTriesCandidatesBehindCachedProbesThenSelf(t *testing.T) {
	now := time.Unix(1000, 0)
	pr := &prober{calls: map[string]int{}, fail: map[string]string{"claude": "claude CLI not found"}}
	rt := New(pr, time.Minute, func() time.Time { return now })
	r, n := run(t, graph.Policy{})
	got := rt.Route(context.Background(), r, n)
	if got.Engine != "codex" || len(got.Probes) != 2 || got.Probes[0].Ready || !got.Probes[1].Ready {
		t.Fatalf("route %+v", got)
	}
	if !strings.Contains(got.Reason, "claude: claude CLI not found") {
		t.Errorf("reason %q does not say why claude was passed over", got.Reason)
	}
	rt.Route(context.Background(), r, n)
	if pr.calls["claude"] != 1 || pr.calls["codex"] != 1 {
		t.Fatalf("probes %v: the cache was not used", pr.calls)
	}
	now = now.Add(2 * time.Minute)
	pr.fail["codex"] = "401 from the model"
	pr.fail["copilot"] = "no token"
	got = rt.Route(context.Background(), r, n)
	if got.Engine != graph.Self || !strings.Contains(got.Reason, "falling back to self") {
		t.Fatalf("route %+v, want self", got)
	}
	if pr.calls["claude"] != 2 {
		t.Fatalf("an expired probe was not repeated: %v", pr.calls)
	}
}

func TestPreviewDoesNoIO(t *testing.T) {
	pr := &prober{calls: map[string]int{}}
	rt := New(pr, 0, nil)
	r, n := run(t, graph.Policy{})
	got := rt.Preview(r, n)
	if got.Engine != "claude" || !strings.Contains(got.Reason, "to be probed") || len(pr.calls) != 0 {
		t.Fatalf("preview %+v, probes %v", got, pr.calls)
	}
}

func TestBalancedAllocationIsADeterministicRanking(t *testing.T) {
	cands := []graph.Candidate{{Engine: "claude"}, {Engine: "codex"}, {Engine: "copilot"}}
	for name, tc := range map[string]struct {
		load map[string]Stats
		want []string
	}{
		"idle: stage preference":      {nil, []string{"claude", "codex", "copilot"}},
		"claude busy":                 {map[string]Stats{"claude": {Assigned: 2, Running: 2}}, []string{"codex", "claude", "copilot"}},
		"codex erring":                {map[string]Stats{"codex": {Assigned: 3, Errors: 3}}, []string{"claude", "copilot", "codex"}},
		"completions earn a place":    {map[string]Stats{"claude": {Assigned: 1, Running: 1}, "codex": {Assigned: 6, Completed: 6}}, []string{"codex", "claude", "copilot"}},
		"ties keep the stage's order": {map[string]Stats{"claude": {Assigned: 4}}, []string{"claude", "codex", "copilot"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, c := range Rank(cands, tc.load) {
				got = append(got, c.Engine)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ranking %v, want %v", got, tc.want)
			}
		})
	}
}

func TestModelTiers(t *testing.T) {
	for name, tc := range map[string]struct {
		engine, model string
		extra         map[string]map[string]string
		want, note    string
	}{
		"a model id passes":     {"codex", "gpt-5.5", nil, "gpt-5.5", ""},
		"a declared tier":       {"claude", "opus", nil, "claude-opus-5-5", "tier opus → claude-opus-5-5"},
		"an undeclared tier":    {"codex", "opus", nil, "gpt-5.5", "tier opus is not declared by codex: using gpt-5.5 instead"},
		"no default either":     {"copilot", "haiku", nil, "", "using its own default model instead"},
		"the run adds a tier":   {"codex", "opus", map[string]map[string]string{"codex": {"opus": "gpt-6"}}, "gpt-6", "tier opus → gpt-6"},
		"an unknown engine":     {"myplugin", "fast", nil, "", "not declared by myplugin"},
		"script declares none ": {"script", "sonnet", nil, "script-1", "not declared by script"},
	} {
		t.Run(name, func(t *testing.T) {
			got, note := Resolve(tc.extra, tc.engine, tc.model)
			if got != tc.want || !strings.Contains(note, tc.note) {
				t.Fatalf("Resolve = %q, %q; want %q, note with %q", got, note, tc.want, tc.note)
			}
		})
	}
}

func TestATierFallbackIsInTheRoutingReason(t *testing.T) {
	rt := New(nil, 0, nil)
	r, n := run(t, graph.Policy{Engine: "codex", Model: "opus"})
	got := rt.Route(context.Background(), r, n)
	if got.Model != "gpt-5.5" || !strings.Contains(got.Reason, "tier opus is not declared by codex") {
		t.Fatalf("route %+v", got)
	}
}
