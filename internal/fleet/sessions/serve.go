package sessions

import (
	"context"
	"encoding/json"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// The requests one node sends another about a session of the other's,
// each with one typed body; their replies are the same values the
// manager returns.
const (
	opCreate          = "session.create"  // createReq → api.Session
	opGet             = "session.get"     // idReq → api.Session
	opList            = "session.list"    // listReq → listReply
	opDelete          = "session.delete"  // idReq → nothing
	opCommand         = "session.command" // commandReq → *wire.Reply
	opWait            = "session.wait"    // waitReq → api.WaitReply
	opWorkspaceStatus = "workspace.status"
	opWorkspaceCommit = "workspace.commit" // commitReq → commit id
	opWorkspaceMerge  = "workspace.merge"
	opTermOpen        = "term.open" // termOpenReq → termOpenReply
)

type idReq struct {
	ID string `json:"id"`
}

type createReq struct {
	Spec      wire.Spec       `json:"spec"`
	Placement fleet.Placement `json:"placement"`
}

type listReq struct {
	IDs []string `json:"ids"`
}

type listReply struct {
	Sessions []api.Session `json:"sessions"`
}

type commandReq struct {
	ID string `json:"id"`
	// Command is the command's JSON object (command.Marshal), decoded by
	// the owner as its HTTP layer decodes one.
	Command json.RawMessage `json:"command"`
}

type waitReq struct {
	ID    string      `json:"id"`
	For   api.WaitFor `json:"for"`
	After *int64      `json:"after,omitempty"`
	// Timeout is how long the caller waits for the condition.
	Timeout time.Duration `json:"timeout"`
}

type commitReq struct {
	ID      string `json:"id"`
	Message string `json:"message"`
}

// handlers are this node's answers to other nodes.
func (f *Fleet) handlers() map[string]fleet.Handler {
	return map[string]fleet.Handler{
		opCreate: func(ctx context.Context, raw []byte) (any, error) {
			var req createReq
			m, err := f.decode(raw, &req)
			if err != nil {
				return nil, err
			}
			return f.createHere(ctx, m, req.Spec, req.Placement)
		},
		opGet: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, _ []byte) (any, error) {
			s, err := m.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			if rec, err := f.node.Record(ctx, id); err == nil {
				s.Fleet = fleetView(rec)
			}
			return s, nil
		}),
		opList: func(ctx context.Context, raw []byte) (any, error) {
			var req listReq
			m, err := f.decode(raw, &req)
			if err != nil {
				return nil, err
			}
			var mine []string
			for _, id := range req.IDs {
				if rec, err := f.node.Record(ctx, id); err == nil && rec.Node == f.node.Name() {
					mine = append(mine, id)
				}
			}
			return listReply{Sessions: f.describe(ctx, m, mine)}, nil
		},
		opDelete: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, _ []byte) (any, error) {
			return nil, f.deleteHere(ctx, m, id)
		}),
		opCommand: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, raw []byte) (any, error) {
			var req commandReq
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, badRequest(err)
			}
			cmd, err := command.Decode(req.Command)
			if err != nil {
				return nil, err
			}
			return m.Command(ctx, id, cmd)
		}),
		opWait: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, raw []byte) (any, error) {
			var req waitReq
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, badRequest(err)
			}
			wctx, cancel := context.WithTimeout(ctx, req.Timeout)
			defer cancel()
			return m.Wait(wctx, id, supervisor.WaitOptions{For: req.For, After: req.After})
		}),
		opWorkspaceStatus: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, _ []byte) (any, error) {
			return m.WorkspaceStatus(ctx, id)
		}),
		opWorkspaceCommit: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, raw []byte) (any, error) {
			var req commitReq
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, badRequest(err)
			}
			return m.WorkspaceCommit(ctx, id, req.Message)
		}),
		opWorkspaceMerge: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, _ []byte) (any, error) {
			return m.WorkspaceMerge(ctx, id)
		}),
		opTermOpen: f.owned(func(ctx context.Context, m *supervisor.Manager, id string, raw []byte) (any, error) {
			var req termOpenReq
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, badRequest(err)
			}
			return f.terms.serveOpen(ctx, m, id, req)
		}),
	}
}

func badRequest(err error) error {
	return wire.Errorf(wire.CodeBadRequest, "request from another node: %v", err)
}

// decode reads a request into v once the manager is there.
func (f *Fleet) decode(raw []byte, v any) (*supervisor.Manager, error) {
	m, err := f.local.manager()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, badRequest(err)
	}
	return m, nil
}

// owned serves a request about one session, once it is sure the session
// belongs to this node: one that moved is refused with conflict, and the
// caller asks its new node.
func (f *Fleet) owned(h func(ctx context.Context, m *supervisor.Manager, id string, raw []byte) (any, error)) fleet.Handler {
	return func(ctx context.Context, raw []byte) (any, error) {
		var req idReq
		m, err := f.decode(raw, &req)
		if err != nil {
			return nil, err
		}
		rec, err := f.node.Record(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		if rec.Node != f.node.Name() {
			return nil, wire.Errorf(wire.CodeConflict, "session %s belongs to node %s, not %s", req.ID, rec.Node, f.node.Name())
		}
		return h(ctx, m, req.ID, raw)
	}
}

func logSession(id string) zap.Field { return zap.String("session", id) }
func logErr(err error) zap.Field     { return zap.Error(err) }
