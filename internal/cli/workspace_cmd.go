package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// newWorkspace holds supervisor new's workspace flags.
type newWorkspace struct {
	on           *bool
	base, branch *string
	keep         *bool
}

func workspaceFlags(fs *flag.FlagSet) newWorkspace {
	return newWorkspace{
		on:     fs.Bool("workspace", false, "work in a git worktree of its own, on a new branch of --cwd's repository"),
		base:   fs.String("base", "", "workspace: the branch or commit to start from (default HEAD)"),
		branch: fs.String("branch", "", "workspace: the new branch's name (default corral/<random>)"),
		keep:   fs.Bool("keep-workspace", false, "workspace: keep the worktree and branch when the session is deleted"),
	}
}

func (w newWorkspace) spec() *wire.Workspace {
	if !*w.on && *w.base == "" && *w.branch == "" && !*w.keep {
		return nil
	}
	return &wire.Workspace{Base: *w.base, Branch: *w.branch, Keep: *w.keep}
}

const workspaceSummary = `Show, commit or merge a session's workspace (a session created with
--workspace): "diff" (the default) prints the branch's whole diff against its
base; "commit MESSAGE..." commits everything in the worktree; "merge" merges
the branch into its base branch locally, never forced: with conflicts nothing
changes and the conflicting files are listed (exit status 1).`

func runWorkspace(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "workspace", "ID [diff|commit MESSAGE...|merge]", workspaceSummary)
	c, pos, err := simple(e, fs, args, 1, -1)
	if err != nil {
		return err
	}
	id, verb := pos[0], "diff"
	if len(pos) > 1 {
		verb = pos[1]
	}
	out := func(v any, text string) error {
		return e.emit(v, func(w io.Writer) error { _, err := io.WriteString(w, text); return err })
	}
	switch verb {
	case "diff":
		if len(pos) > 2 {
			return usagef("diff takes no argument")
		}
		st, err := c.Workspace(ctx, id)
		if err != nil {
			return err
		}
		return out(st, diffText(st))
	case "commit":
		msg := strings.Join(pos[2:], " ")
		if strings.TrimSpace(msg) == "" {
			return usagef("commit needs a message")
		}
		commit, err := c.CommitWorkspace(ctx, id, msg)
		if err != nil {
			return err
		}
		return out(map[string]string{"commit": commit}, commit+"\n")
	case "merge":
		if len(pos) > 2 {
			return usagef("merge takes no argument")
		}
		res, err := c.MergeWorkspace(ctx, id)
		if err != nil {
			return err
		}
		if res.Merged {
			return out(res, fmt.Sprintf("merged into %s: %s\n", res.Base, res.Commit))
		}
		if err := out(res, fmt.Sprintf("not merged: conflicts in %s; nothing changed\n", strings.Join(res.Conflicts, ", "))); err != nil {
			return err
		}
		return exitStatus(1)
	default:
		return usagef("unknown workspace action %q: want diff, commit or merge", verb)
	}
}

// diffText is a workspace's state and its diff as a patch.
func diffText(st *api.WorkspaceStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace %s on %s from %s (%s), %d commit(s) ahead", st.Path, st.Branch, st.Base, short(st.BaseCommit), st.Ahead)
	if st.Dirty {
		b.WriteString(", changes not committed")
	}
	b.WriteString("\n")
	for _, f := range st.Files {
		patch, err := f.Patch()
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", f.Path, err)
			continue
		}
		b.Write(patch)
	}
	return b.String()
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
