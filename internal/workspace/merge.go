package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// Merge merges the workspace's branch into its base branch, locally. It
// never forces: uncommitted work in the workspace or in the base branch's
// own worktree is refused (conflict), and a merge with conflicts changes
// nothing and lists them.
func Merge(ctx context.Context, ws wire.Workspace) (*api.MergeResult, error) {
	res := &api.MergeResult{Base: ws.Base}
	ref, err := git(ctx, ws.Repo, "rev-parse", "--verify", "--quiet", "--symbolic-full-name", "--end-of-options", ws.Base)
	ref = strings.TrimSpace(ref)
	if err != nil || !strings.HasPrefix(ref, "refs/heads/") {
		return nil, wire.Errorf(wire.CodeBadRequest, "workspace base %q is not a branch: there is nothing to merge into", ws.Base)
	}
	if porcelain, err := git(ctx, ws.Path, "status", "--porcelain"); err != nil {
		return nil, err
	} else if porcelain != "" {
		return nil, wire.Errorf(wire.CodeConflict, "workspace %s has changes not committed: commit them first", ws.Branch)
	}
	baseTip, err := git(ctx, ws.Repo, "rev-parse", ref)
	if err != nil {
		return nil, err
	}
	baseTip = strings.TrimSpace(baseTip)
	head, err := git(ctx, ws.Path, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	head = strings.TrimSpace(head)
	if _, code, _ := gitStatus(ctx, ws.Repo, "merge-base", "--is-ancestor", head, baseTip); code == 0 {
		res.Merged, res.Commit = true, baseTip
		return res, nil
	}
	// merge-tree computes the merge without touching any worktree: exit 1
	// and the conflicting files when it would conflict.
	out, code, err := gitStatus(ctx, ws.Repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", baseTip, head)
	switch {
	case code == 1:
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines[1:] {
			if l != "" {
				res.Conflicts = append(res.Conflicts, l)
			}
		}
		return res, nil
	case err != nil:
		return nil, err
	}
	tree := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	msg := fmt.Sprintf("Merge branch '%s' into %s", ws.Branch, strings.TrimPrefix(ref, "refs/heads/"))
	if wt, ok, err := checkedOutAt(ctx, ws.Repo, ref); err != nil {
		return nil, err
	} else if ok {
		// The base branch is someone's worktree: merge there, so its
		// files follow, and only when it is clean.
		if porcelain, err := git(ctx, wt, "status", "--porcelain", "--untracked-files=no"); err != nil {
			return nil, err
		} else if porcelain != "" {
			return nil, wire.Errorf(wire.CodeConflict, "the base branch %s is checked out in %s with changes not committed: commit or stash them first", ws.Base, wt)
		}
		args := append(identity(ctx, wt), "merge", "--no-ff", "--no-edit", "--no-verify", "-m", msg, head)
		if _, err := git(ctx, wt, args...); err != nil {
			git(ctx, wt, "merge", "--abort")
			return nil, err
		}
	} else {
		args := append(identity(ctx, ws.Repo), "commit-tree", tree, "-p", baseTip, "-p", head, "-m", msg)
		commit, err := git(ctx, ws.Repo, args...)
		if err != nil {
			return nil, err
		}
		// Compare-and-swap: a base that moved meanwhile is not overwritten.
		if _, err := git(ctx, ws.Repo, "update-ref", "-m", msg, ref, strings.TrimSpace(commit), baseTip); err != nil {
			return nil, wire.Errorf(wire.CodeConflict, "the base branch %s moved during the merge; try again", ws.Base)
		}
	}
	tip, err := git(ctx, ws.Repo, "rev-parse", ref)
	if err != nil {
		return nil, err
	}
	res.Merged, res.Commit = true, strings.TrimSpace(tip)
	return res, nil
}

// checkedOutAt finds the worktree that has ref checked out.
func checkedOutAt(ctx context.Context, repo, ref string) (string, bool, error) {
	out, err := git(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return "", false, err
	}
	var path string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "worktree "):
			path = strings.TrimPrefix(l, "worktree ")
		case l == "branch "+ref:
			return path, true, nil
		}
	}
	return "", false, nil
}
