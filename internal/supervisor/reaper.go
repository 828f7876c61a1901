package supervisor

import (
	"context"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"go.uber.org/zap"
)

// RunReaper stops idle runners every ReapInterval until ctx ends, and
// quiet ones past a lowered MaxLive (SetMaxLive).
func (m *Manager) RunReaper(ctx context.Context) error {
	t := time.NewTicker(m.cfg.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			m.Reap(ctx)
			_ = m.fitLive(0) // no error with room 0: busy runners are left to finish
		}
	}
}

// Reap stops every runner idle for IdleTTL and returns how many it stopped.
// A runner is spared while a call is pending on it, a terminal is attached,
// or its last state report shows anything under way or waiting for a
// person (a turn, queued messages, open asks, pending edits).
func (m *Manager) Reap(_ context.Context) int {
	now := m.cfg.Now()
	var reap []*entry
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return 0
	}
	seen := map[*entry]bool{}
	for _, e := range m.entries {
		if seen[e] {
			continue
		}
		seen[e] = true
		if m.idleLocked(e, now) {
			e.retiring = true
			reap = append(reap, e)
		}
	}
	m.mu.Unlock()

	var wg sync.WaitGroup
	for _, e := range reap {
		m.log.Info("reaping idle runner", zap.Strings("sessions", e.ids))
		for _, id := range e.ids {
			m.publishLife(id, api.Lifecycle{Type: api.LifeReaped, Reason: "idle"})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.child.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
		}()
	}
	wg.Wait()
	return len(reap)
}

// idleLocked reports whether e's runner has been idle since the TTL.
func (m *Manager) idleLocked(e *entry, now time.Time) bool {
	return m.quietLocked(e) && now.Sub(lastActive(e)) >= m.cfg.IdleTTL
}

// quietLocked reports whether e's runner could be stopped without cutting
// anything short: started, not being stopped, no call pending, nothing
// under way or waiting in its session by its own report, no terminal.
func (m *Manager) quietLocked(e *entry) bool {
	select {
	case <-e.ready:
	default:
		return false
	}
	c := e.child
	if e.err != nil || e.retiring || e.holds > 0 || !c.alive() {
		return false
	}
	return !c.busy() && !c.holdsTerminal()
}

// lastActive is when e's session was last used or last stopped being busy.
func lastActive(e *entry) time.Time {
	last := e.lastUsed
	if t := e.child.idleSince.Load(); t > 0 {
		if ts := time.Unix(0, t); ts.After(last) {
			last = ts
		}
	}
	return last
}
