package sessions

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/httpapi"
	"github.com/corral-dev/corral/pkg/api"
	"go.uber.org/zap"
)

// The multiplexed stream of a node in a fleet covers the fleet: it reads
// the event replica (fleet.Feed), where every node puts its sessions'
// events and lifecycle changes.

func (f *Fleet) feed(ctx context.Context, opts supervisor.FeedOptions) (httpapi.FeedStream, error) {
	s, err := f.node.Feed(ctx, fleet.FeedOptions{
		Sessions: opts.Sessions, Types: opts.Types, FromStart: opts.FromStart, FromSeq: opts.FromSeq, Cursor: opts.Cursor,
	})
	if err != nil {
		return nil, err
	}
	return &fleetFeed{s: s}, nil
}

// fleetFeed reads the fleet's stream as the HTTP layer reads a feed.
type fleetFeed struct {
	s    *fleet.Feed
	mark []byte
}

func (ff *fleetFeed) Next(ctx context.Context) (supervisor.FeedEvent, error) {
	it, err := ff.s.Next(ctx)
	if err != nil {
		return supervisor.FeedEvent{}, err
	}
	ev := supervisor.FeedEvent{Kind: supervisor.FeedSessionEvent, Cursor: []byte(it.Cursor), Session: it.Session, Type: it.Type, Line: it.Line}
	switch {
	case it.Mark != "":
		ff.mark, _ = json.Marshal(api.StreamMark{Type: api.StreamMarkType(it.Mark), Reason: it.Reason})
		ev.Kind, ev.Type, ev.Line = supervisor.FeedMark, []byte(it.Mark), ff.mark
	case it.Lifecycle:
		ev.Kind = supervisor.FeedLifecycle
	}
	return ev, nil
}

func (ff *fleetFeed) Buffered() bool { return ff.s.Buffered() }
func (ff *fleetFeed) Close() error   { return ff.s.Close() }

// lifecycles is every kind of lifecycle change a node publishes.
var lifecycles = lifecycleTypes()

func lifecycleTypes() []string {
	var out []string
	for _, t := range api.LifecycleTypes() {
		out = append(out, string(t))
	}
	return out
}

// publishLifecycles copies this node's lifecycle changes into the replica
// until ctx ends.
func (f *Fleet) publishLifecycles(ctx context.Context, wg *sync.WaitGroup, m *supervisor.Manager) {
	feed, err := m.Feed(ctx, supervisor.FeedOptions{Types: lifecycles})
	if err != nil {
		f.log.Warn("lifecycle changes will not reach the fleet", zap.Error(err))
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer feed.Close()
		for {
			ev, err := feed.Next(ctx)
			if err != nil {
				return
			}
			if ev.Kind != supervisor.FeedLifecycle {
				continue
			}
			if err := f.node.PublishLifecycle(ctx, ev.Session, ev.Line); err != nil {
				f.log.Debug("lifecycle change not published", logSession(ev.Session), logErr(err))
			}
		}
	}()
}
