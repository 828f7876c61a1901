package gitcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// AddWorktree gives an isolated subgoal a worktree of its own at path, on
// a new branch made from repo's HEAD; when path is a worktree already (a
// later attempt), it is kept as it is.
func AddWorktree(ctx context.Context, repo, path, branch string) error {
	if _, err := os.Stat(path); err == nil {
		if r, err := Root(ctx, path); err == nil && r == path {
			return nil
		}
		return fmt.Errorf("worktree %s: the folder exists and is not a worktree", path)
	}
	root, err := Root(ctx, repo)
	if err != nil {
		return fmt.Errorf("isolation needs a git repository: %s: %w", repo, err)
	}
	if _, err := git(ctx, root, "rev-parse", "--verify", "-q", "HEAD"); err != nil {
		return errors.New("isolation needs a repository with at least one commit")
	}
	if _, err := git(ctx, root, "worktree", "add", "-b", branch, path, "HEAD"); err != nil {
		// The branch may survive a worktree removed by hand.
		if _, err2 := git(ctx, root, "worktree", "add", path, branch); err2 != nil {
			return err
		}
	}
	return nil
}

// CommitAll commits everything in a worktree, when anything changed, and
// reports whether it made a commit. A repository without an identity gets
// Corral's.
func CommitAll(ctx context.Context, dir, message string) (bool, error) {
	if _, err := git(ctx, dir, "add", "-A"); err != nil {
		return false, err
	}
	if _, err := git(ctx, dir, "diff", "--cached", "--quiet"); err == nil {
		return false, nil
	}
	args := []string{"commit", "-q", "--no-verify", "-m", message}
	if out, err := git(ctx, dir, "config", "user.email"); err != nil || strings.TrimSpace(string(out)) == "" {
		args = append([]string{"-c", "user.name=Corral", "-c", "user.email=corral@localhost"}, args...)
	}
	if _, err := git(ctx, dir, args...); err != nil {
		return false, err
	}
	return true, nil
}

// Merge merges branch into the worktree at dir; on a conflict the merge is
// aborted and the worktree left as it was.
func Merge(ctx context.Context, dir, branch, message string) error {
	args := []string{"merge", "--no-ff", "--no-verify", "-m", message, branch}
	if out, err := git(ctx, dir, "config", "user.email"); err != nil || strings.TrimSpace(string(out)) == "" {
		args = append([]string{"-c", "user.name=Corral", "-c", "user.email=corral@localhost"}, args...)
	}
	if _, err := git(ctx, dir, args...); err != nil {
		git(ctx, dir, "merge", "--abort")
		return fmt.Errorf("merge %s: %w", branch, err)
	}
	return nil
}
