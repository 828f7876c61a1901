// Package drivers gives the graph executor its view of a supervisor's
// sessions: over the supervisor's Go client, for processes that talk to a
// running supervisor (the MCP server, the CLI), and over the session
// manager itself, for the supervisor's own HTTP routes.
package drivers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/corral-dev/corral/internal/graph/executor"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Client drives sessions through a supervisor's HTTP API.
func Client(c *client.Client) executor.Sessions { return clientSessions{c} }

type clientSessions struct{ c *client.Client }

func (s clientSessions) Create(ctx context.Context, spec wire.Spec) (string, error) {
	sess, err := s.c.CreateSession(ctx, spec)
	if err != nil {
		return "", err
	}
	return sess.ID, nil
}

func (s clientSessions) Command(ctx context.Context, id string, cmd command.Request) (*wire.Reply, error) {
	return s.c.Command(ctx, id, cmd)
}

func (s clientSessions) Delete(ctx context.Context, id string) error {
	return s.c.DeleteSession(ctx, id)
}

func (s clientSessions) Events(ctx context.Context, id string, from int64, follow bool) (executor.Events, error) {
	opts := client.EventsOptions{From: from, Follow: follow}
	if follow {
		// A stream that reconnects after the supervisor restarted would
		// otherwise wait for ever: the session's runner died with it and
		// nothing starts a new one. A status command does, and the new
		// runner closes the turn the crash left open (interrupted).
		opts.OnReconnect = func(lost error) {
			if lost == nil {
				go func() {
					wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
					defer cancel()
					s.c.Command(wctx, id, command.GetStatus{})
				}()
			}
		}
	}
	st, err := s.c.Events(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	return clientEvents{st}, nil
}

type clientEvents struct{ s *client.EventStream }

func (e clientEvents) Next(context.Context) (event.Event, error) {
	line, err := e.s.Next()
	if err != nil {
		return event.Event{}, err
	}
	return decode(line)
}

func (e clientEvents) Close() error { return e.s.Close() }

func decode(line []byte) (event.Event, error) {
	var ev event.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return event.Event{}, fmt.Errorf("event line: %w", err)
	}
	return ev, nil
}

// Manager drives sessions through a supervisor's session manager, in the
// supervisor's own process.
func Manager(m *supervisor.Manager) executor.Sessions { return managerSessions{m} }

type managerSessions struct{ m *supervisor.Manager }

func (s managerSessions) Create(ctx context.Context, spec wire.Spec) (string, error) {
	sess, err := s.m.Create(ctx, spec)
	if err != nil {
		return "", err
	}
	return sess.ID, nil
}

func (s managerSessions) Command(ctx context.Context, id string, cmd command.Request) (*wire.Reply, error) {
	reply, err := s.m.Command(ctx, id, cmd)
	if err != nil {
		return nil, err
	}
	if err := reply.Err(); err != nil {
		return nil, err
	}
	return reply, nil
}

func (s managerSessions) Delete(ctx context.Context, id string) error { return s.m.Delete(ctx, id) }

func (s managerSessions) Events(ctx context.Context, id string, from int64, follow bool) (executor.Events, error) {
	st, err := s.m.Events(ctx, id, from, follow)
	if err != nil {
		return nil, err
	}
	return &managerEvents{s: st}, nil
}

type managerEvents struct{ s *supervisor.Stream }

func (e *managerEvents) Next(ctx context.Context) (event.Event, error) {
	ev, err := e.s.Next(ctx)
	if err != nil {
		return event.Event{}, err
	}
	return decode(ev.Line)
}

func (e *managerEvents) Close() error { return e.s.Close() }
