package plugin

import (
	"context"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Started returns e as a runner should drive it once Start succeeded: an
// engine.Engine that also implements exactly the optional interfaces
// (Steerer, Forker, Judge, Compactor) the plugin's engine advertised. A
// runner finds optional behaviour by type assertion, and what a plugin can
// do is known only once it runs, so e itself claims none of them.
func (e *Engine) Started() engine.Engine {
	c := e.Capabilities()
	var (
		s engine.Steerer   = steerer{e}
		f engine.Forker    = forker{e}
		j engine.Judge     = judge{e}
		k engine.Compactor = compactor{e}
	)
	type (
		E = engine.Engine
		S = engine.Steerer
		F = engine.Forker
		J = engine.Judge
		K = engine.Compactor
	)
	switch [4]bool{c.Steer, c.Fork, c.Judge, c.Compact} {
	case [4]bool{false, false, false, false}:
		return e
	case [4]bool{true, false, false, false}:
		return struct {
			E
			S
		}{e, s}
	case [4]bool{false, true, false, false}:
		return struct {
			E
			F
		}{e, f}
	case [4]bool{false, false, true, false}:
		return struct {
			E
			J
		}{e, j}
	case [4]bool{false, false, false, true}:
		return struct {
			E
			K
		}{e, k}
	case [4]bool{true, true, false, false}:
		return struct {
			E
			S
			F
		}{e, s, f}
	case [4]bool{true, false, true, false}:
		return struct {
			E
			S
			J
		}{e, s, j}
	case [4]bool{true, false, false, true}:
		return struct {
			E
			S
			K
		}{e, s, k}
	case [4]bool{false, true, true, false}:
		return struct {
			E
			F
			J
		}{e, f, j}
	case [4]bool{false, true, false, true}:
		return struct {
			E
			F
			K
		}{e, f, k}
	case [4]bool{false, false, true, true}:
		return struct {
			E
			J
			K
		}{e, j, k}
	case [4]bool{true, true, true, false}:
		return struct {
			E
			S
			F
			J
		}{e, s, f, j}
	case [4]bool{true, true, false, true}:
		return struct {
			E
			S
			F
			K
		}{e, s, f, k}
	case [4]bool{true, false, true, true}:
		return struct {
			E
			S
			J
			K
		}{e, s, j, k}
	case [4]bool{false, true, true, true}:
		return struct {
			E
			F
			J
			K
		}{e, f, j, k}
	default:
		return struct {
			E
			S
			F
			J
			K
		}{e, s, f, j, k}
	}
}

// One adapter per optional interface, so Started can compose them.
type (
	steerer   struct{ e *Engine }
	forker    struct{ e *Engine }
	judge     struct{ e *Engine }
	compactor struct{ e *Engine }
)

func (s steerer) Steer(ctx context.Context, text string) error { return s.e.steer(ctx, text) }
func (f forker) Fork(ctx context.Context) (string, error)      { return f.e.fork(ctx) }
func (j judge) Judge(ctx context.Context, prompt string) (string, event.UsageData, error) {
	return j.e.judge(ctx, prompt)
}
func (k compactor) Compact(ctx context.Context) error { return k.e.compact(ctx) }
