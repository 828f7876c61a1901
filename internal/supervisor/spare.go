package supervisor

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// spare is the runner started ahead of need (Config.SpareRunner). A runner
// process takes far longer to start than a session takes to open in it, so
// a session on a built-in engine is opened in the spare, and another spare
// is started behind it.
//
// Its fields are guarded by Manager.mu.
type spare struct {
	child    *child        // handshaken, holding no session
	starting chan struct{} // closed when the start under way ends; nil when none is
	failed   time.Time     // when a start last failed
}

// spareRetry is how long after a failed start no spare is tried: a runner
// that cannot start must not be restarted at every call.
const spareRetry = 5 * time.Second

// takeSpare hands the spare to session id, waiting for one being started
// (which is sooner than starting another), or returns nil when there is
// none.
func (m *Manager) takeSpare(ctx context.Context, id string) *child {
	if !m.cfg.SpareRunner {
		return nil
	}
	m.mu.Lock()
	starting := m.spare.starting
	m.mu.Unlock()
	if starting != nil {
		select {
		case <-starting:
		case <-ctx.Done():
			return nil
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.spare.child
	m.spare.child = nil
	if c == nil || !c.alive() || m.closed {
		return nil
	}
	c.takeSession(id)
	c.log.Debug("spare runner takes a session", zap.String("session", id))
	return c
}

// refillSpare starts a spare unless one is ready or being started.
func (m *Manager) refillSpare() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refillSpareLocked()
}

// refillSpareLocked is refillSpare with m.mu held: the end of every call
// checks it, so the common case (a spare is ready) costs two comparisons.
func (m *Manager) refillSpareLocked() {
	if !m.cfg.SpareRunner || m.closed || m.spare.child != nil || m.spare.starting != nil {
		return
	}
	if time.Since(m.spare.failed) < spareRetry {
		return
	}
	done := make(chan struct{})
	m.spare.starting = done
	m.spawns.Add(1)
	go func() {
		defer m.spawns.Done()
		ctx, cancel := context.WithTimeout(m.stopping, m.cfg.StartTimeout)
		defer cancel()
		c, err := m.startProcess(ctx, m.cfg.RunnerPath, "", "")
		m.mu.Lock()
		m.spare.starting = nil
		late := err == nil && m.closed
		switch {
		case err != nil:
			m.spare.failed = time.Now()
		case !late:
			m.spare.child = c
		}
		m.mu.Unlock()
		close(done)
		switch {
		case err != nil:
			m.log.Warn("spare runner did not start", zap.Error(err))
		case late:
			c.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
		}
	}()
}

// stopSpare stops the spare, if any, during Shutdown.
func (m *Manager) stopSpare() {
	m.mu.Lock()
	c := m.spare.child
	m.spare.child = nil
	m.mu.Unlock()
	if c != nil {
		c.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
	}
}
