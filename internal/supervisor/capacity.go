package supervisor

import (
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// Live sessions are capped (Config.MaxLive) so that a host opening sessions
// faster than it closes them meets a clear answer instead of exhausting the
// machine: every live session is a runner, and for the real engines an
// agent CLI process of a few hundred MB besides.

// Runners whose session waits for a person (an ask, a review, messages
// held by the spend cap) have a budget of their own, Config.MaxWaiting:
// up to it they do not count against MaxLive, so that people slow to
// answer never make a new session fail. Past it the rest count as live.

// liveLocked counts the runners that are live or starting, each once, that
// count against MaxLive.
func (m *Manager) liveLocked() int {
	seen := map[*entry]bool{}
	waiting := 0
	for _, e := range m.entries {
		if e.retiring || seen[e] {
			continue
		}
		seen[e] = true
		if waitsForPerson(e) {
			waiting++
		}
	}
	return len(seen) - min(waiting, m.cfg.MaxWaiting)
}

// Load is what a fleet places new sessions by: the runners that count
// against MaxLive (live or starting), and those being stopped to make room
// or as idle, which hold their memory until they exit. Counting the
// starting and the stopping keeps a node whose runners are slow to start
// or stop (a busy machine) from looking emptier than it is, and so from
// drawing every new session while it turns runners over.
func (m *Manager) Load() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.liveLocked()
	seen := map[*entry]bool{}
	for _, e := range m.entries {
		if e.retiring && !seen[e] {
			seen[e] = true
			n++
		}
	}
	return n
}

// waitsForPerson reports whether e's runner is up and its session waits
// for a person (wire.StateReport.WaitsForPerson).
func waitsForPerson(e *entry) bool {
	select {
	case <-e.ready:
	default:
		return false
	}
	if e.err != nil || !e.child.alive() {
		return false
	}
	st := e.child.state.Load()
	return st != nil && st.WaitsForPerson()
}

// SetMaxLive changes the cap on live runners (Config.MaxLive) while the
// manager runs. Lowered below the runners live now, it stops the least
// recently used quiet ones until the cap holds; busy ones stay until the
// reaper finds them quiet or idle.
func (m *Manager) SetMaxLive(n int) error {
	if n <= 0 {
		return wire.Errorf(wire.CodeBadRequest, "max live sessions must be positive, not %d", n)
	}
	m.mu.Lock()
	m.cfg.MaxLive = n
	m.mu.Unlock()
	return m.fitLive(0)
}

// MaxLive is the cap on live runners now.
func (m *Manager) MaxLive() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg.MaxLive
}

// makeRoom stops the least recently used quiet runner when MaxLive runners
// are live, so that another can start: that session resumes, in a new
// runner, at its next use. It fails with unavailable when every live runner
// is busy (a turn, an ask, a call, a terminal, queued or pending work).
func (m *Manager) makeRoom() error {
	return m.fitLive(1)
}

// fitLive stops least recently used quiet runners until room more fit
// under MaxLive. Quiet is by the runners' own state reports, so nothing
// waits on a runner here. With room 0 (a lowered cap) busy runners are no
// error: they are left to finish.
func (m *Manager) fitLive(room int) error {
	for {
		m.mu.Lock()
		maxLive := m.cfg.MaxLive
		if m.closed || m.liveLocked()+room <= maxLive {
			m.mu.Unlock()
			return nil
		}
		var lru *entry
		seen := map[*entry]bool{}
		for _, e := range m.entries {
			if seen[e] {
				continue
			}
			seen[e] = true
			if m.quietLocked(e) && (lru == nil || lastActive(e).Before(lastActive(lru))) {
				lru = e
			}
		}
		if lru == nil {
			m.mu.Unlock()
			if room == 0 {
				return nil
			}
			return wire.Errorf(wire.CodeUnavailable,
				"%d sessions are live, the most this supervisor runs at once (--max-live), and none is idle: retry when one is", maxLive)
		}
		// No longer counted as live: the start that needed room may go ahead.
		lru.retiring = true
		m.mu.Unlock()
		m.log.Info("stopping the least recently used runner to make room", zap.Strings("sessions", lru.ids), zap.Int("maxLive", maxLive))
		for _, id := range lru.ids {
			m.publishLife(id, api.Lifecycle{Type: api.LifeReaped, Reason: "room"})
		}
		m.spawns.Add(1)
		go func() {
			defer m.spawns.Done()
			lru.child.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
		}()
	}
}
