package runner

import (
	"testing"

	"github.com/corral-dev/corral/pkg/event"
)

func TestMeterReportsTheCapReachedOnce(t *testing.T) {
	m := newMeter(1)
	steps := []struct {
		cost    float64
		crossed bool
	}{{0.4, false}, {0.5, false}, {0.2, true}, {0.3, false}}
	for i, s := range steps {
		crossed, spent, capUSD := m.add(event.UsageData{CostUSD: s.cost})
		if crossed != s.crossed || capUSD != 1 {
			t.Fatalf("step %d: crossed %v (spent %.2f), want %v", i, crossed, spent, s.crossed)
		}
	}
	if !m.reached() {
		t.Fatal("the cap is not held after it was crossed")
	}
	m.setCap(1.2) // still under what was spent
	if !m.reached() {
		t.Fatal("a cap below what was spent released the queue")
	}
	m.setCap(5)
	if m.reached() {
		t.Fatal("a raised cap still holds the queue")
	}
	m.setCap(0)
	if crossed, _, _ := m.add(event.UsageData{CostUSD: 100}); crossed || m.reached() {
		t.Fatal("no cap, yet the cap was reached")
	}
}

func TestMeterTakesTheExactFigureOverTheEstimate(t *testing.T) {
	cases := []struct {
		name      string
		exact     *event.UsageData
		turnCost  float64
		totalCost float64
		crossed   bool
	}{
		{"estimate only", nil, 0.5, 0.75, false},
		{"exact above the estimate", &event.UsageData{CostUSD: 1.5}, 1.5, 1.75, true},
		{"exact below the estimate", &event.UsageData{CostUSD: 0.1}, 0.1, 0.35, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMeter(1)
			m.add(event.UsageData{CostUSD: 0.25}) // before the turn
			m.beginTurn()
			m.add(event.UsageData{CostUSD: 0.5, Estimated: true})
			got := m.endTurn(c.exact)
			if got.CostUSD != c.turnCost || m.usage().CostUSD != c.totalCost {
				t.Fatalf("turn %.2f, total %.2f; want %.2f, %.2f", got.CostUSD, m.usage().CostUSD, c.turnCost, c.totalCost)
			}
			if crossed, _, _ := m.check(); crossed != c.crossed {
				t.Fatalf("check: crossed %v, want %v", crossed, c.crossed)
			}
			// Usage between turns counts in the total only.
			m.add(event.UsageData{CostUSD: 0.01})
			if got := m.endTurn(nil); got.CostUSD != 0 {
				t.Fatalf("a turn that never began cost %.2f", got.CostUSD)
			}
		})
	}
}
