package sessions

import (
	"context"
	"sync"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/httpapi"
	"github.com/corral-dev/corral/pkg/api"
	"go.uber.org/zap"
)

// The multiplexed stream of a node in a fleet covers the fleet: it reads
// the event replica (fleet.Feed), where every node puts its sessions'
// events and lifecycle changes.

func (f *Fleet) feed(ctx context.Context, opts supervisor.FeedOptions) (httpapi.FeedStream, error) {
	s, err := f.node.Feed(ctx, opts)
	if err != nil {
		return nil, err // not a nil *fleet.Feed in an interface
	}
	return s, nil
}

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
