package runner

import (
	"context"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// A turnEndPolicy is a rule the runner applies each time a turn ends,
// after turnEnded is in the log and while the session still counts as
// settling, so that nothing (a fork, print mode's exit) acts in between.
// The runner applies them one after another, in a fixed order: the spend
// cap, compaction, the goal check.
type turnEndPolicy interface {
	afterTurn(ctx context.Context, end turnEnd)
}

// turnEnd is what a policy knows of the turn that ended.
type turnEnd struct {
	// outcome is done, stopped or failed.
	outcome string
	// eng is the engine that ran it.
	eng engine.Engine
}

// policyHost is what the policies may do to the session.
type policyHost interface {
	// spec is the session's configuration now.
	spec() wire.Spec
	emit(typ event.Type, data any)
	// engineUsage records the usage of an engine call a policy made (the
	// goal's judge) as the engine's own usage events are recorded: an
	// event, counted by the meter against the spend cap.
	engineUsage(u event.UsageData)
	// enqueue queues a message of kind.
	enqueue(text, kind string)
	// busy reports whether something comes before a message a policy
	// would queue: the runner is closing, a message waits, or the spend
	// cap holds the queue.
	busy() bool
}

// spendCapPolicy reports the spend cap reached when the exact cost an
// engine gives at a turn's end took spending to it (the meter then holds
// the queue); a cap crossed during the turn is reported, and the turn
// stopped, as the usage arrives.
type spendCapPolicy struct {
	meter *meter
	host  policyHost
}

func (p spendCapPolicy) afterTurn(context.Context, turnEnd) {
	if crossed, spent, capUSD := p.meter.check(); crossed {
		p.host.emit(event.Failure, spendCapFailure(spent, capUSD))
	}
}
