package httpapi

// A session's workspace (docs/api.md, Workspaces): its branch's diff
// against the base, commit, and merge into the base branch.

import (
	"net/http"

	"github.com/corral-dev/corral/internal/workspace"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// workspaceRoute serves one workspace operation: it reads the body into
// req (when not nil), finds the session's workspace, and writes what op
// returns.
func (s *server) workspaceRoute(req any, op func(r *http.Request, ws wire.Workspace) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if req != nil {
			if err := decodeBody(w, r, req); err != nil {
				writeError(w, err)
				return
			}
		}
		ws, err := s.m.Workspace(r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		reply, err := op(r, ws)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, reply)
	}
}

func (s *server) workspaceGet(w http.ResponseWriter, r *http.Request) {
	s.workspaceRoute(nil, func(r *http.Request, ws wire.Workspace) (any, error) {
		st, err := workspace.Inspect(r.Context(), ws)
		return api.WorkspaceReply{OK: true, Workspace: st}, err
	})(w, r)
}

func (s *server) workspaceCommit(w http.ResponseWriter, r *http.Request) {
	var req api.CommitRequest
	s.workspaceRoute(&req, func(r *http.Request, ws wire.Workspace) (any, error) {
		commit, err := workspace.Commit(r.Context(), ws, req.Message)
		return api.CommitReply{OK: true, Commit: commit}, err
	})(w, r)
}

func (s *server) workspaceMerge(w http.ResponseWriter, r *http.Request) {
	s.workspaceRoute(&struct{}{}, func(r *http.Request, ws wire.Workspace) (any, error) {
		res, err := workspace.Merge(r.Context(), ws)
		return api.MergeReply{OK: true, Result: res}, err
	})(w, r)
}
