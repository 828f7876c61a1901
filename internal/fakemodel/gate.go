package fakemodel

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrNoSuchHold is returned by Release and WaitHeld for a name that is not
// the name of a step with hold: true.
var ErrNoSuchHold = errors.New("no step of that name holds")

// gate is the hold of one named step. It opens once and stays open, so a
// Release that comes before the request lets the answer through at once.
type gate struct {
	reachedOnce sync.Once
	reached     chan struct{} // closed when an answer first waits at the gate
	releaseOnce sync.Once
	released    chan struct{}
}

func newGate() *gate {
	return &gate{reached: make(chan struct{}), released: make(chan struct{})}
}

// hold waits at g until it is released, the client goes away or the server
// closes; it returns the outcome that ended the answer, or "" to go on.
func (s *Server) hold(ctx context.Context, g *gate) string {
	g.reachedOnce.Do(func() { close(g.reached) })
	select {
	case <-g.released:
		return ""
	case <-ctx.Done():
		return s.gone()
	case <-s.closing:
		return OutcomeServerClosed
	}
}

// Release lets the answers of the held step name go on, now and for every
// later request that step answers.
func (s *Server) Release(name string) error {
	g, ok := s.gates[name]
	if !ok {
		return fmt.Errorf("release %q: %w", name, ErrNoSuchHold)
	}
	g.releaseOnce.Do(func() { close(g.released) })
	return nil
}

// WaitHeld waits until an answer of the held step name has reached its hold
// point, so a test knows the engine is mid-request before acting.
func (s *Server) WaitHeld(ctx context.Context, name string) error {
	g, ok := s.gates[name]
	if !ok {
		return fmt.Errorf("wait for hold %q: %w", name, ErrNoSuchHold)
	}
	select {
	case <-g.reached:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for hold %q: %w", name, ctx.Err())
	}
}
