package claude

import (
	"math"
	"testing"

	"github.com/corral-dev/corral/pkg/event"
)

func TestCostLedger(t *testing.T) {
	cost := func(total float64, since ...float64) resultFrame {
		r := resultFrame{TotalCostUSD: &total, SinceLast: map[string]modelUsage{}}
		for i, s := range since {
			r.SinceLast[string(rune('a'+i))] = modelUsage{CostUSD: s}
		}
		return r
	}
	fresh := costLedger{known: true}
	for i, tc := range []struct {
		r    resultFrame
		want float64
	}{
		{cost(0.146672, 0.146672), 0.146672},
		{cost(0.195668, 0.048996), 0.048996},
		{cost(0.195668), 0},
	} {
		if got := fresh.turnCost(tc.r); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("fresh turn %d cost = %v, want %v", i, got, tc.want)
		}
	}
	// A resumed conversation's first total includes earlier processes: the
	// CLI's own per-turn figure counts, summed over models.
	resumed := costLedger{}
	if got := resumed.turnCost(cost(0.195668, 0.04, 0.008996)); math.Abs(got-0.048996) > 1e-12 {
		t.Errorf("resumed first turn cost = %v", got)
	}
	if got := resumed.turnCost(cost(0.2, 0.004332)); math.Abs(got-0.004332) > 1e-12 {
		t.Errorf("resumed second turn cost = %v", got)
	}
}

func TestWindowAndContext(t *testing.T) {
	learned := map[string]int64{"m-learned": 300_000}
	for model, want := range map[string]int64{"claude-opus-5-5": 1_000_000, "m-learned": 300_000, "claude-sonnet-5-5[1m]": 1_000_000, "unknown": defaultContextWindow} {
		if got := windowFor(model, learned); got != want {
			t.Errorf("windowFor(%q) = %d, want %d", model, got, want)
		}
	}
	c := callUsage{input: 1000, cacheRead: 49_000, cacheWrite: 0, output: 1000}
	d := c.contextData(200_000)
	if d != (event.ContextData{UsedTokens: 51_000, WindowTokens: 200_000, Percent: 25.5}) {
		t.Errorf("contextData = %+v", d)
	}
}
