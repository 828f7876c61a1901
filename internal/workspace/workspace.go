// Package workspace gives a session a git worktree of its own: a new
// branch from a chosen base, checked out in a folder of the supervisor's
// state, removed with the session unless kept. It shows the branch's whole
// diff against its base (committed and not), commits it with a message,
// and merges it back into the base branch locally — never forced: a merge
// that would conflict changes nothing and names the conflicting files.
//
// Every git command runs with hooks and fsmonitor switched off
// (core.hooksPath=/dev/null, core.fsmonitor=false): the repository's
// configuration may have been written by the agent, which is not trusted
// to run programs outside the gate.
package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/pkg/wire"
)

// git runs git in dir and returns its stdout; a failure carries stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, _, err := gitStatus(ctx, dir, args...)
	return out, err
}

// gitStatus runs git and returns stdout and the exit code (-1 when it did
// not run); err is set for any non-zero exit.
func gitStatus(ctx context.Context, dir string, args ...string) (string, int, error) {
	full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", dir}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.String(), code, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return stdout.String(), 0, nil
}

// ErrNotARepository is returned when a session's folder is not in a git
// repository.
var ErrNotARepository = errors.New("not in a git repository")

// Create makes the worktree ws asks for: a new branch from ws.Base (HEAD
// by default) of the repository holding repoDir, checked out in a new
// folder under root. It returns ws completed with Repo, BaseCommit, Branch
// and Path.
func Create(ctx context.Context, root, repoDir string, ws wire.Workspace) (wire.Workspace, error) {
	if repoDir == "" {
		return ws, wire.Errorf(wire.CodeBadRequest, "a workspace needs cwd: a folder in the git repository to branch from")
	}
	top, err := git(ctx, repoDir, "rev-parse", "--show-toplevel")
	if err != nil {
		return ws, wire.Errorf(wire.CodeBadRequest, "workspace: %s is %v", repoDir, ErrNotARepository)
	}
	ws.Repo = strings.TrimSpace(top)
	if ws.Base == "" {
		ws.Base = "HEAD"
	}
	if strings.HasPrefix(ws.Base, "-") {
		return ws, wire.Errorf(wire.CodeBadRequest, "workspace base %q is not a branch or commit", ws.Base)
	}
	commit, err := git(ctx, ws.Repo, "rev-parse", "--verify", "--quiet", "--end-of-options", ws.Base+"^{commit}")
	if err != nil {
		return ws, wire.Errorf(wire.CodeBadRequest, "workspace base %q is not a branch or commit of %s", ws.Base, ws.Repo)
	}
	ws.BaseCommit = strings.TrimSpace(commit)
	// A base given as HEAD names the branch checked out, so a merge has
	// somewhere to go.
	if ws.Base == "HEAD" {
		if b, err := git(ctx, ws.Repo, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
			ws.Base = strings.TrimSpace(b)
		}
	}
	suffix, err := randomSuffix()
	if err != nil {
		return ws, err
	}
	if ws.Branch == "" {
		ws.Branch = "corral/" + suffix
	}
	if _, err := git(ctx, ws.Repo, "check-ref-format", "--branch", ws.Branch); err != nil || strings.HasPrefix(ws.Branch, "-") {
		return ws, wire.Errorf(wire.CodeBadRequest, "workspace branch %q is not a valid branch name", ws.Branch)
	}
	if _, err := git(ctx, ws.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+ws.Branch); err == nil {
		return ws, wire.Errorf(wire.CodeConflict, "workspace branch %q exists already", ws.Branch)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return ws, fmt.Errorf("workspaces folder: %w", err)
	}
	ws.Path = filepath.Join(root, filepath.Base(ws.Repo)+"-"+suffix)
	if _, err := git(ctx, ws.Repo, "worktree", "add", "--quiet", "-b", ws.Branch, "--", ws.Path, ws.BaseCommit); err != nil {
		return ws, fmt.Errorf("workspace: %w", err)
	}
	return ws, nil
}

// Remove takes the worktree away. The branch goes too when the base holds
// all of its commits; a branch with work nowhere else is kept (and said
// so), since deleting it would lose that work.
func Remove(ctx context.Context, ws wire.Workspace) (keptBranch bool, err error) {
	if ws.Repo == "" || ws.Path == "" {
		return false, nil
	}
	if _, err := git(ctx, ws.Repo, "worktree", "remove", "--force", "--", ws.Path); err != nil {
		if _, serr := os.Stat(ws.Path); serr == nil {
			return false, fmt.Errorf("remove workspace %s: %w", ws.Path, err)
		}
		// Already gone: forget it.
		git(ctx, ws.Repo, "worktree", "prune")
	}
	if _, err := git(ctx, ws.Repo, "branch", "-d", "--", ws.Branch); err != nil {
		return true, nil
	}
	return false, nil
}

func randomSuffix() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
