package httpapi

// A session's workspace (docs/api.md, Workspaces): its branch's diff
// against the base, commit, and merge into the base branch.

import (
	"net/http"

	"github.com/corral-dev/corral/internal/workspace"
	"github.com/corral-dev/corral/pkg/api"
)

func (s *server) workspaceGet(w http.ResponseWriter, r *http.Request) {
	ws, err := s.m.Workspace(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	st, err := workspace.Inspect(r.Context(), ws)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.WorkspaceReply{OK: true, Workspace: st})
}

func (s *server) workspaceCommit(w http.ResponseWriter, r *http.Request) {
	var req api.CommitRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	ws, err := s.m.Workspace(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	commit, err := workspace.Commit(r.Context(), ws, req.Message)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.CommitReply{OK: true, Commit: commit})
}

func (s *server) workspaceMerge(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	ws, err := s.m.Workspace(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := workspace.Merge(r.Context(), ws)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.MergeReply{OK: true, Result: res})
}
