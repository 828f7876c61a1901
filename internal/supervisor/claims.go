package supervisor

import (
	"context"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// A supervisor in a fleet (internal/fleet) starts a session's runner only
// while it holds the session's claim, a lease other supervisors respect,
// and stops the runner when the fleet says the claim is lost. Without a
// fleet there are no claims and nothing here costs anything.

// Claimer grants claims on sessions (Config.Claims).
type Claimer interface {
	// Claim is asked before a runner starts for session id, and when a
	// runner moves to a new session (a fork). An error refuses the start.
	Claim(ctx context.Context, id string) (Claim, error)
}

// Claim is held while a runner holds its session.
type Claim interface {
	// Release is called once the runner is gone. It must not block.
	Release()
}

// claim asks the Claimer, when there is one, for session id's claim.
func (m *Manager) claim(ctx context.Context, id string) (Claim, error) {
	if m.cfg.Claims == nil {
		return nil, nil
	}
	return m.cfg.Claims.Claim(ctx, id)
}

// releaseClaims releases what entry e held, once.
func releaseClaims(e *entry) {
	for _, c := range e.claims {
		c.Release()
	}
	e.claims = nil
}

// Wake starts session id's runner if none holds it, as a command would.
func (m *Manager) Wake(ctx context.Context, id string) error {
	ctx, cancel := m.withCallTimeout(ctx)
	defer cancel()
	e, err := m.acquire(ctx, id)
	if err != nil {
		return err
	}
	m.release(e, true)
	return nil
}

// StopRunner stops the runner holding session id, if any, and returns once
// it is gone: asked to shut down first, then its process group is sent
// SIGTERM and SIGKILL so that it is gone by deadline. A fleet calls it
// when the session's claim is lost.
func (m *Manager) StopRunner(id string, deadline time.Time) {
	m.mu.Lock()
	e := m.entries[id]
	if e == nil {
		m.mu.Unlock()
		return
	}
	e.retiring = true
	m.mu.Unlock()
	<-e.ready
	c := e.child
	if c == nil {
		return
	}
	budget := max(time.Until(deadline), 0)
	m.log.Warn("stopping a runner whose claim is lost", zap.String("session", id), zap.Duration("budget", budget))
	// Half the budget for a clean shutdown, a quarter after SIGTERM; the
	// last quarter is the margin for SIGKILL to take effect.
	c.stop(budget/2, budget/4)
	if time.Now().After(deadline) {
		m.log.Error("runner outlived its claim's deadline", zap.String("session", id),
			zap.Error(wire.Errorf(wire.CodeInternal, "stopped %v late", time.Since(deadline))))
	}
}

// claimRotated claims the session a runner moved to (a fork) for the rest
// of the runner's life; a runner that cannot hold it is stopped.
func (m *Manager) claimRotated(e *entry, to string) {
	defer m.spawns.Done()
	ctx, cancel := context.WithTimeout(m.stopping, m.cfg.StartTimeout)
	claim, err := m.cfg.Claims.Claim(ctx, to)
	cancel()
	m.mu.Lock()
	alive := err == nil && m.entries[to] == e && e.child.alive()
	if alive {
		e.claims = append(e.claims, claim)
	}
	m.mu.Unlock()
	switch {
	case err != nil:
		m.log.Error("no claim on the session a runner moved to: stopping it", zap.String("session", to), zap.Error(err))
		m.StopRunner(to, time.Now().Add(m.cfg.ShutdownGrace+m.cfg.KillGrace))
	case !alive:
		claim.Release() // the runner is gone already
	}
}
