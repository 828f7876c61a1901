package httpapi

// A session's workspace (docs/api.md, Workspaces): its branch's diff
// against the base, commit, and merge into the base branch.

import (
	"net/http"

	"github.com/corral-dev/corral/pkg/api"
)

// workspaceRoute serves one workspace operation: it reads the body into
// req (when not nil) and writes what op returns.
func (s *server) workspaceRoute(req any, op func(r *http.Request, id string) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if req != nil {
			if err := decodeBody(w, r, req); err != nil {
				writeError(w, err)
				return
			}
		}
		reply, err := op(r, r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, reply)
	}
}

func (s *server) workspaceGet(w http.ResponseWriter, r *http.Request) {
	s.workspaceRoute(nil, func(r *http.Request, id string) (any, error) {
		st, err := s.m.WorkspaceStatus(r.Context(), id)
		return api.WorkspaceReply{OK: true, Workspace: st}, err
	})(w, r)
}

func (s *server) workspaceCommit(w http.ResponseWriter, r *http.Request) {
	var req api.CommitRequest
	s.workspaceRoute(&req, func(r *http.Request, id string) (any, error) {
		commit, err := s.m.WorkspaceCommit(r.Context(), id, req.Message)
		return api.CommitReply{OK: true, Commit: commit}, err
	})(w, r)
}

func (s *server) workspaceMerge(w http.ResponseWriter, r *http.Request) {
	s.workspaceRoute(&struct{}{}, func(r *http.Request, id string) (any, error) {
		res, err := s.m.WorkspaceMerge(r.Context(), id)
		return api.MergeReply{OK: true, Result: res}, err
	})(w, r)
}
