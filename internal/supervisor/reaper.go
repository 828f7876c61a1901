package supervisor

import (
	"context"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
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
			if err := m.fitLive(ctx, 0); err != nil && ctx.Err() == nil {
				m.log.Warn("stopping runners past --max-live", zap.Error(err))
			}
		}
	}
}

// Reap stops every runner idle for IdleTTL and returns how many it stopped.
// A runner is spared while a call is pending on it, a terminal is attached,
// its mirrored events show a running turn or an open ask, or its own status
// says it is not idle (queued sends, open asks, pending edits).
func (m *Manager) Reap(ctx context.Context) int {
	now := m.cfg.Now()
	var cands []*entry
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
			e.holds++ // keeps the entry ours while its status is asked
			cands = append(cands, e)
		}
	}
	m.mu.Unlock()

	var wg sync.WaitGroup
	reaped := 0
	for _, e := range cands {
		st, err := m.status(ctx, e.child)
		m.mu.Lock()
		e.holds--
		reap := err == nil && statusIdle(st) && m.idleLocked(e, now)
		if reap {
			e.retiring = true
			reaped++
		}
		m.mu.Unlock()
		if err != nil {
			m.log.Debug("status before reaping failed; runner kept", zap.Strings("sessions", e.ids), zap.Error(err))
		}
		if reap {
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
	}
	wg.Wait()
	return reaped
}

// idleLocked reports whether e's runner has been idle since the TTL.
func (m *Manager) idleLocked(e *entry, now time.Time) bool {
	return m.quietLocked(e) && now.Sub(lastActive(e)) >= m.cfg.IdleTTL
}

// quietLocked reports whether e's runner could be stopped without cutting
// anything short, as far as the supervisor sees: started, not being
// stopped, no call pending, no turn running or ask open, no terminal.
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
	return !c.working.Load() && c.openAsks.Load() == 0 && !c.holdsTerminal()
}

// lastActive is when e's session was last used or its last turn ended.
func lastActive(e *entry) time.Time {
	last := e.lastUsed
	if t := e.child.idleSince.Load(); t > 0 {
		if ts := time.Unix(0, t); ts.After(last) {
			last = ts
		}
	}
	return last
}

// statusIdle reports whether a runner's own status shows nothing under way
// or waiting for a person.
func statusIdle(st *command.Status) bool {
	switch st.State {
	case wire.StateIdle, wire.StateStopped, wire.StateFailed, "":
	default:
		return false
	}
	return len(st.Queued) == 0 && len(st.OpenAsks) == 0 && len(st.PendingEdit) == 0
}
