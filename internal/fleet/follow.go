package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// followResets is how many times an ordered consumer tries to recreate
// itself before its reader hears of it. The ordered consumer's own
// attempts ignore the reader's context and, unbounded, go on for ever when
// a consumer cannot be made on the server it asks (seen after a NATS server
// was killed): bounded, the follower makes a new one itself.
const followResets = 2

// followHeartbeat is how often the servers tell an idle follower that its
// consumer lives. A follower that hears nothing for two of them makes its
// consumer again: after the death of the server it was on, 4 s later,
// where the client's default (5 s) took 10, and twice that when the first
// consumer made again was lost in the election too.
const followHeartbeat = 2 * time.Second

// follower reads the event stream's messages on filters from a stream
// sequence on, in order, with an ordered consumer; when that consumer gives
// up recreating itself, the follower starts a new one after the last
// message it returned, waiting out a leader election (transient.go) as long
// as the reader's context lets it.
type follower struct {
	f       *Fabric
	filters []string
	next    uint64 // the stream sequence a new consumer starts at
	iter    jetstream.MessagesContext
}

// follow opens a follower of filters from stream sequence start.
func (f *Fabric) follow(ctx context.Context, filters []string, start uint64) (*follower, error) {
	fl := &follower{f: f, filters: filters, next: start}
	if err := f.retry(ctx, fl.open); err != nil {
		return nil, err
	}
	return fl, nil
}

func (fl *follower) open(ctx context.Context) error {
	// The consumer outlives this call's context.
	cons, err := fl.f.js.OrderedConsumer(context.WithoutCancel(ctx), fl.f.names.eventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects:   fl.filters,
		DeliverPolicy:    jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:      fl.next,
		MaxResetAttempts: followResets,
	})
	if err != nil {
		return err
	}
	iter, err := cons.Messages(jetstream.PullMaxBytes(8<<20), jetstream.PullHeartbeat(followHeartbeat))
	if err != nil {
		return err
	}
	fl.iter = iter
	return nil
}

// Next returns the next message; an error when ctx ends, the follower is
// stopped, or no consumer could be made again.
func (fl *follower) Next(ctx context.Context) (jetstream.Msg, error) {
	for {
		msg, err := fl.iter.Next(jetstream.NextContext(ctx))
		if err == nil {
			if md, merr := msg.Metadata(); merr == nil {
				fl.next = md.Sequence.Stream + 1
			}
			return msg, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return nil, err
		}
		fl.iter.Stop()
		if err := fl.f.retry(ctx, fl.open); err != nil {
			return nil, err
		}
	}
}

// Stop ends the follower; a Next under way returns.
func (fl *follower) Stop() { fl.iter.Stop() }
