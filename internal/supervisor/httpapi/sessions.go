package httpapi

import (
	"context"

	"github.com/corral-dev/corral/internal/eventstream"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/termhost"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// Sessions is every operation the HTTP layer serves on sessions. The
// supervisor's Manager is one implementation (the sessions of one machine:
// FromManager); a fleet node is another (every session of the fleet, each
// routed to the node that owns it: internal/fleet/sessions). Tests serve
// the API over a fake of it.
type Sessions interface {
	// LiveCount counts the sessions with a live runner here.
	LiveCount() int
	// Closing reports whether the supervisor is shutting down (not ready).
	Closing() bool
	Create(ctx context.Context, spec wire.Spec) (api.Session, error)
	List(ctx context.Context) ([]api.Session, error)
	Get(ctx context.Context, id string) (api.Session, error)
	Delete(ctx context.Context, id string) error
	// Command runs a control command; a refused command is a Reply with
	// an error, the error result one that never got an answer.
	Command(ctx context.Context, id string, req command.Request) (*wire.Reply, error)
	// Events reads a session's events from seq from on.
	Events(ctx context.Context, id string, from int64, follow bool) (EventStream, error)
	// Feed opens the multiplexed stream of every session's events.
	Feed(ctx context.Context, opts supervisor.FeedOptions) (FeedStream, error)
	Wait(ctx context.Context, id string, opts supervisor.WaitOptions) (api.WaitReply, error)
	// WorkspaceStatus, WorkspaceCommit and WorkspaceMerge work on a
	// session's workspace where its worktree is.
	WorkspaceStatus(ctx context.Context, id string) (*api.WorkspaceStatus, error)
	WorkspaceCommit(ctx context.Context, id, message string) (string, error)
	WorkspaceMerge(ctx context.Context, id string) (*api.MergeResult, error)
	// Engines describes the engines of the supervisor asked, with its own
	// settings and credentials (in a fleet, of the node the request
	// reached).
	Engines(ctx context.Context, opts supervisor.EnginesOptions) (api.EnginesReply, error)
	termhost.Manager
}

// EventStream is one session's events in seq order, and FeedStream the
// multiplexed stream (internal/eventstream: a manager's and a fleet's
// alike).
type (
	EventStream = eventstream.Stream
	FeedStream  = eventstream.Feed
)

// FromManager serves the sessions of one supervisor's manager: the
// Manager implements Sessions but for the stream types it returns.
func FromManager(m *supervisor.Manager) Sessions { return managerSessions{m} }

type managerSessions struct{ *supervisor.Manager }

func (s managerSessions) Events(ctx context.Context, id string, from int64, follow bool) (EventStream, error) {
	st, err := s.Manager.Events(ctx, id, from, follow)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s managerSessions) Feed(ctx context.Context, opts supervisor.FeedOptions) (FeedStream, error) {
	f, err := s.Manager.Feed(ctx, opts)
	if err != nil {
		return nil, err
	}
	return f, nil
}
