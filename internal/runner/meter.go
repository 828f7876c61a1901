package runner

import (
	"fmt"
	"sync"

	"github.com/corral-dev/corral/pkg/event"
)

// meter adds up what the session spends, in all and in the running turn,
// and holds it to the spend cap: once spending reaches the cap the meter
// reports the cap reached (and the turn queue holds) until the cap is
// raised past what was spent. It owns the cap in force; the spec keeps the
// same figure for meta.json.
type meter struct {
	mu     sync.Mutex
	total  event.UsageData
	turn   *event.UsageData // the running turn's, nil between turns
	capUSD float64          // 0: no cap
	hit    bool
}

func newMeter(capUSD float64) *meter { return &meter{capUSD: capUSD} }

func (m *meter) overLocked() bool { return m.capUSD > 0 && m.total.CostUSD >= m.capUSD }

// crossLocked reports whether spending has just reached the cap, and
// from then on holds it reached.
func (m *meter) crossLocked() bool {
	if m.hit || !m.overLocked() {
		return false
	}
	m.hit = true
	return true
}

// add counts a model call's usage and reports whether it took spending to
// the cap (once: later calls report false until the cap is raised), with
// what was spent and the cap.
func (m *meter) add(u event.UsageData) (crossed bool, spent, capUSD float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total.Add(u)
	if m.turn != nil {
		m.turn.Add(u)
	}
	return m.crossLocked(), m.total.CostUSD, m.capUSD
}

// resume starts the count from what an earlier runner of the session
// spent (read from the log), so that the cap holds across restarts.
func (m *meter) resume(spent event.UsageData) {
	m.mu.Lock()
	m.total = spent
	m.hit = m.overLocked()
	m.mu.Unlock()
}

// beginTurn starts counting a turn.
func (m *meter) beginTurn() {
	m.mu.Lock()
	m.turn = &event.UsageData{}
	m.mu.Unlock()
}

// endTurn ends the running turn and returns its usage. exact, when the
// engine reports one, replaces the estimate the turn's usage events added
// up to, in the turn and in the session's total.
func (m *meter) endTurn(exact *event.UsageData) event.UsageData {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.turn
	m.turn = nil
	if t == nil {
		t = &event.UsageData{}
	}
	if exact != nil {
		m.total.CostUSD += exact.CostUSD - t.CostUSD
		*t = *exact
	}
	return *t
}

// check reports, like add, whether spending has reached the cap since the
// last look (after endTurn took an engine's exact figure).
func (m *meter) check() (crossed bool, spent, capUSD float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crossLocked(), m.total.CostUSD, m.capUSD
}

// setCap puts a new cap in force (0 removes it); the cap counts as reached
// only while spending is at or over it.
func (m *meter) setCap(capUSD float64) {
	m.mu.Lock()
	m.capUSD = capUSD
	m.hit = m.overLocked()
	m.mu.Unlock()
}

// reached reports whether the cap holds the queue.
func (m *meter) reached() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hit
}

// usage returns what the session has spent.
func (m *meter) usage() event.UsageData {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

func spendCapFailure(spent, capUSD float64) event.FailureData {
	return event.FailureData{
		Code:    event.FailSpendCap,
		Message: fmt.Sprintf("spend cap reached: $%.4f spent of a $%.2f cap", spent, capUSD),
		Action:  actionFor(event.FailSpendCap),
	}
}
