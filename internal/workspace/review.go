package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// maxFiles bounds the files a diff shows; maxFileBytes the size of one.
const (
	maxFiles     = 500
	maxFileBytes = 4 << 20
)

// Inspect returns ws's status and diff.
func Inspect(ctx context.Context, ws wire.Workspace) (*api.WorkspaceStatus, error) {
	st := &api.WorkspaceStatus{Path: ws.Path, Branch: ws.Branch, Base: ws.Base, BaseCommit: ws.BaseCommit, Keep: ws.Keep, Files: []*hunks.Edit{}}
	head, err := git(ctx, ws.Path, "rev-parse", "HEAD")
	if err != nil {
		return nil, wire.Errorf(wire.CodeNotFound, "workspace %s: %v", ws.Path, err)
	}
	st.Head = strings.TrimSpace(head)
	n, err := git(ctx, ws.Path, "rev-list", "--count", ws.BaseCommit+"..HEAD")
	if err != nil {
		return nil, err
	}
	st.Ahead, _ = strconv.Atoi(strings.TrimSpace(n))
	porcelain, err := git(ctx, ws.Path, "status", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	st.Dirty = porcelain != ""
	changed, err := changedPaths(ctx, ws)
	if err != nil {
		return nil, err
	}
	if len(changed) > maxFiles {
		changed, st.Truncated = changed[:maxFiles], true
	}
	for _, p := range changed {
		e, err := diffFile(ctx, ws, p)
		if err != nil {
			return nil, err
		}
		if e != nil {
			st.Files = append(st.Files, e)
		}
	}
	return st, nil
}

// changedPaths lists the files that differ between the base commit and
// the worktree, tracked or not (ignored files excepted), in git's order.
func changedPaths(ctx context.Context, ws wire.Workspace) ([]string, error) {
	tracked, err := git(ctx, ws.Path, "diff", "--name-only", "-z", "--no-renames", ws.BaseCommit, "--")
	if err != nil {
		return nil, err
	}
	untracked, err := git(ctx, ws.Path, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range strings.Split(tracked+untracked, "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

func diffFile(ctx context.Context, ws wire.Workspace, path string) (*hunks.Edit, error) {
	var old, cur hunks.Snapshot
	if raw, code, err := gitStatus(ctx, ws.Path, "cat-file", "blob", ws.BaseCommit+":"+path); err == nil {
		old = hunks.Present([]byte(raw))
	} else if code != 128 {
		return nil, err
	}
	full := filepath.Join(ws.Path, filepath.FromSlash(path))
	fi, err := os.Lstat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("workspace: %w", err)
	case !fi.Mode().IsRegular():
		// A symlink or submodule: shown by its name only.
		return &hunks.Edit{Path: path, Kind: hunks.KindModify, Binary: true, Hunks: []hunks.Hunk{}}, nil
	case fi.Size() > maxFileBytes:
		return &hunks.Edit{Path: path, Kind: hunks.KindModify, Binary: true, NewSize: int(fi.Size()), Hunks: []hunks.Hunk{}}, nil
	default:
		raw, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		cur = hunks.Present(raw)
	}
	e, err := hunks.Diff(path, old, cur)
	if err != nil {
		return nil, fmt.Errorf("workspace: diff %s: %w", path, err)
	}
	if len(e.Hunks) == 0 {
		return nil, nil
	}
	return e, nil
}

// Commit commits everything in the worktree (new files included) with
// message, and returns the new commit's id. The author is the
// repository's configured user, else "Corral".
func Commit(ctx context.Context, ws wire.Workspace, message string) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", wire.Errorf(wire.CodeBadRequest, "a commit needs a message")
	}
	if _, err := git(ctx, ws.Path, "add", "--all"); err != nil {
		return "", err
	}
	if _, code, _ := gitStatus(ctx, ws.Path, "diff", "--cached", "--quiet"); code == 0 {
		return "", wire.Errorf(wire.CodeConflict, "nothing to commit in workspace %s", ws.Branch)
	}
	args := identity(ctx, ws.Path)
	args = append(args, "commit", "--quiet", "--no-verify", "-m", message)
	if _, err := git(ctx, ws.Path, args...); err != nil {
		return "", err
	}
	head, err := git(ctx, ws.Path, "rev-parse", "HEAD")
	return strings.TrimSpace(head), err
}

// identity returns -c flags naming an author when the repository has none.
func identity(ctx context.Context, dir string) []string {
	var args []string
	if out, err := git(ctx, dir, "config", "user.name"); err != nil || strings.TrimSpace(out) == "" {
		args = append(args, "-c", "user.name=Corral")
	}
	if out, err := git(ctx, dir, "config", "user.email"); err != nil || strings.TrimSpace(out) == "" {
		args = append(args, "-c", "user.email=corral@localhost")
	}
	return args
}
