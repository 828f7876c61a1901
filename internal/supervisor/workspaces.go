package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/internal/workspace"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// workspacesDir holds the worktrees of sessions created with a workspace.
func (m *Manager) workspacesDir() string { return filepath.Join(m.cfg.StorageDir, "workspaces") }

// makeWorkspace creates the worktree spec asks for and points the session
// at it. undo removes it again (for a create that fails later).
func (m *Manager) makeWorkspace(ctx context.Context, spec wire.Spec) (wire.Spec, func(), error) {
	if spec.Workspace == nil {
		return spec, func() {}, nil
	}
	req := *spec.Workspace
	if req.Repo != "" || req.BaseCommit != "" || req.Path != "" {
		return spec, nil, wire.Errorf(wire.CodeBadRequest, "workspace: repo, baseCommit and path are set by the supervisor; send base, branch and keep only")
	}
	ws, err := workspace.Create(ctx, m.workspacesDir(), spec.Cwd, req)
	if err != nil {
		return spec, nil, err
	}
	spec.Cwd = ws.Path
	spec.Workspace = &ws
	undo := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ws.Keep = false
		if _, err := workspace.Remove(ctx, ws); err != nil {
			m.log.Warn("removing the workspace of a session that did not start", zap.String("path", ws.Path), zap.Error(err))
		}
	}
	return spec, undo, nil
}

// dropWorkspace removes a deleted session's worktree unless it was to be
// kept or another session (a fork) still works in it.
func (m *Manager) dropWorkspace(ctx context.Context, id string, spec wire.Spec) {
	ws := spec.Workspace
	if ws == nil || ws.Keep || ws.Path == "" {
		return
	}
	if m.workspaceInUse(ws.Path, id) {
		m.log.Info("workspace kept: another session works in it", zap.String("path", ws.Path))
		return
	}
	kept, err := workspace.Remove(ctx, *ws)
	if err != nil {
		m.log.Warn("removing a deleted session's workspace", zap.String("session", id), zap.Error(err))
		return
	}
	if kept {
		m.log.Info("workspace removed; its branch is kept as its work is not merged", zap.String("session", id), zap.String("branch", ws.Branch))
	}
}

func (m *Manager) workspaceInUse(path, except string) bool {
	entries, err := os.ReadDir(m.sessions)
	if err != nil {
		return true // unsure: keep it
	}
	for _, e := range entries {
		if e.Name() == except || !e.IsDir() {
			continue
		}
		spec, ok, err := sessiondir.ReadSpec(m.dir(e.Name()))
		if err == nil && ok && spec.Workspace != nil && spec.Workspace.Path == path {
			return true
		}
	}
	return false
}

// Workspace returns session id's workspace; not_found when it has none.
func (m *Manager) Workspace(id string) (wire.Workspace, error) {
	if !validID(id) {
		return wire.Workspace{}, notFound(id)
	}
	spec, err := readSpec(m.dir(id), id)
	if err != nil {
		return wire.Workspace{}, err
	}
	if spec.Workspace == nil || spec.Workspace.Path == "" {
		return wire.Workspace{}, wire.Errorf(wire.CodeNotFound, "session %s has no workspace (create it with \"workspace\" in its spec)", id)
	}
	return *spec.Workspace, nil
}

// WorkspaceStatus is session id's workspace: its branch's diff against the
// base and what is not committed yet.
func (m *Manager) WorkspaceStatus(ctx context.Context, id string) (*api.WorkspaceStatus, error) {
	ws, err := m.Workspace(id)
	if err != nil {
		return nil, err
	}
	return workspace.Inspect(ctx, ws)
}

// WorkspaceCommit commits what session id's worktree holds.
func (m *Manager) WorkspaceCommit(ctx context.Context, id, message string) (string, error) {
	ws, err := m.Workspace(id)
	if err != nil {
		return "", err
	}
	return workspace.Commit(ctx, ws, message)
}

// WorkspaceMerge merges session id's branch into its base branch.
func (m *Manager) WorkspaceMerge(ctx context.Context, id string) (*api.MergeResult, error) {
	ws, err := m.Workspace(id)
	if err != nil {
		return nil, err
	}
	return workspace.Merge(ctx, ws)
}
