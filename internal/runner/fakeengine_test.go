package runner

import (
	"context"
	"sync"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// fakeEngine is an engine whose turns a test writes as a function, for
// what the script engine cannot stage: an exact cost reported only at a
// turn's end, an interrupt that takes its time, a fork that waits.
type fakeEngine struct {
	// turn plays one turn; nil ends every turn at once.
	turn func(ctx context.Context, in engine.TurnInput, host engine.Host) (engine.TurnResult, error)
	// interrupt handles Interrupt; nil does nothing.
	interrupt func(ctx context.Context) error

	mu     sync.Mutex
	host   engine.Host
	config map[string]string // StartOptions.Config
	turns  []string          // the messages this instance ran a turn on
	closed bool
}

func (e *fakeEngine) Start(_ context.Context, opts engine.StartOptions) (string, error) {
	e.mu.Lock()
	e.host, e.config = opts.Host, opts.Config
	e.mu.Unlock()
	if opts.Resume != "" {
		return opts.Resume, nil
	}
	return "conv-1", nil
}

func (e *fakeEngine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	e.mu.Lock()
	e.turns = append(e.turns, in.Text)
	host, turn := e.host, e.turn
	e.mu.Unlock()
	if turn == nil {
		return engine.TurnResult{}, nil
	}
	return turn(ctx, in, host)
}

func (e *fakeEngine) Interrupt(ctx context.Context) error {
	if e.interrupt == nil {
		return nil
	}
	return e.interrupt(ctx)
}

func (e *fakeEngine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	return nil
}

// ran lists the messages this instance ran turns on.
func (e *fakeEngine) ran() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.turns...)
}

// forkingEngine is a fakeEngine that can fork; fork, when set, runs first.
type forkingEngine struct {
	*fakeEngine
	fork func(ctx context.Context) error
}

func (e forkingEngine) Fork(ctx context.Context) (string, error) {
	if e.fork != nil {
		if err := e.fork(ctx); err != nil {
			return "", err
		}
	}
	return "conv-branch", nil
}

var (
	_ engine.Engine = (*fakeEngine)(nil)
	_ engine.Forker = forkingEngine{}
)

// startFake starts a session whose engine is "fake", built by factory.
func (s *session) startFake(spec wire.Spec, factory engine.Factory) {
	s.t.Helper()
	s.engines = map[string]engine.Factory{"fake": factory}
	spec.Engine = "fake"
	s.start(spec)
}
