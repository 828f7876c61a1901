package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/wire"
)

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// newRepo makes a repository on branch main with one commit.
func newRepo(t *testing.T) string {
	t.Helper()
	testenv.NeedGit(t)
	dir := t.TempDir()
	run(t, dir, "init", "--quiet", "--initial-branch=main")
	run(t, dir, "config", "user.name", "Test")
	run(t, dir, "config", "user.email", "test@example.com")
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(dir, "gone.txt"), "to be deleted\n")
	run(t, dir, "add", ".")
	run(t, dir, "commit", "--quiet", "-m", "start")
	return dir
}

func create(t *testing.T, repo string, ws wire.Workspace) wire.Workspace {
	t.Helper()
	got, err := Create(context.Background(), filepath.Join(t.TempDir(), "workspaces"), repo, ws)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestCreateBranchesFromTheBase(t *testing.T) {
	repo := newRepo(t)
	ws := create(t, filepath.Join(repo), wire.Workspace{})
	if ws.Base != "main" || !strings.HasPrefix(ws.Branch, "corral/") || ws.Repo == "" || ws.Path == "" {
		t.Fatalf("workspace %+v", ws)
	}
	if got := run(t, ws.Path, "rev-parse", "--abbrev-ref", "HEAD"); got != ws.Branch {
		t.Errorf("worktree on %q, want %q", got, ws.Branch)
	}
	if got := run(t, repo, "rev-parse", "main"); got != ws.BaseCommit {
		t.Errorf("base commit %s, want main's %s", ws.BaseCommit, got)
	}
	if read(t, filepath.Join(ws.Path, "a.txt")) != "one\ntwo\nthree\n" {
		t.Error("the worktree does not hold the base's files")
	}
}

func TestCreateRefusesBadRequests(t *testing.T) {
	repo := newRepo(t)
	create(t, repo, wire.Workspace{Branch: "taken"})
	cases := []struct {
		name string
		dir  string
		ws   wire.Workspace
		code wire.Code
	}{
		{"not a repository", t.TempDir(), wire.Workspace{}, wire.CodeBadRequest},
		{"no such base", repo, wire.Workspace{Base: "nope"}, wire.CodeBadRequest},
		{"a base that looks like a flag", repo, wire.Workspace{Base: "--output=/tmp/x"}, wire.CodeBadRequest},
		{"a bad branch name", repo, wire.Workspace{Branch: "a..b"}, wire.CodeBadRequest},
		{"a branch that looks like a flag", repo, wire.Workspace{Branch: "-D"}, wire.CodeBadRequest},
		{"a branch that exists", repo, wire.Workspace{Branch: "taken"}, wire.CodeConflict},
		{"no folder", "", wire.Workspace{}, wire.CodeBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Create(context.Background(), t.TempDir(), c.dir, c.ws)
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != c.code {
				t.Fatalf("error %v, want code %s", err, c.code)
			}
		})
	}
}

func TestInspectShowsTheWholeBranchAgainstItsBase(t *testing.T) {
	repo := newRepo(t)
	ws := create(t, repo, wire.Workspace{})
	// One change committed, one not, a new file, a deleted file.
	write(t, filepath.Join(ws.Path, "a.txt"), "one\nTWO\nthree\n")
	run(t, ws.Path, "commit", "--quiet", "-am", "two in capitals")
	write(t, filepath.Join(ws.Path, "a.txt"), "one\nTWO\nthree\nfour\n")
	write(t, filepath.Join(ws.Path, "new/b.txt"), "bee\n")
	os.Remove(filepath.Join(ws.Path, "gone.txt"))
	write(t, filepath.Join(ws.Path, "bin.dat"), "\x00\x01\x02")

	st, err := Inspect(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ahead != 1 || !st.Dirty {
		t.Errorf("ahead %d dirty %v, want 1 and true", st.Ahead, st.Dirty)
	}
	kinds := map[string]string{}
	for _, f := range st.Files {
		kinds[f.Path] = string(f.Kind)
		if f.Path == "a.txt" && (f.Added != 2 || f.Removed != 1) {
			t.Errorf("a.txt: +%d -%d, want +2 -1 (committed and not)", f.Added, f.Removed)
		}
		if f.Path == "bin.dat" && !f.Binary {
			t.Error("bin.dat is not shown as binary")
		}
	}
	want := map[string]string{"a.txt": "modify", "gone.txt": "delete", "new/b.txt": "create", "bin.dat": "create"}
	for p, k := range want {
		if kinds[p] != k {
			t.Errorf("%s: kind %q, want %q (all: %v)", p, kinds[p], k, kinds)
		}
	}
}

func TestCommitAndMergeIntoTheCheckedOutBase(t *testing.T) {
	repo := newRepo(t)
	ws := create(t, repo, wire.Workspace{})
	if _, err := Commit(context.Background(), ws, "nothing"); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("commit of nothing: %v, want conflict", err)
	}
	write(t, filepath.Join(ws.Path, "c.txt"), "sea\n")
	if _, err := Merge(context.Background(), ws); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("merge with changes not committed: %v, want conflict", err)
	}
	commit, err := Commit(context.Background(), ws, "add c")
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, ws.Path, "log", "-1", "--format=%s"); got != "add c" {
		t.Errorf("commit message %q", got)
	}
	res, err := Merge(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Merged || res.Commit == "" {
		t.Fatalf("merge: %+v", res)
	}
	// main is checked out in repo: its files follow the merge.
	if read(t, filepath.Join(repo, "c.txt")) != "sea\n" {
		t.Error("the base's worktree did not get the merged file")
	}
	if _, code, _ := gitStatus(context.Background(), repo, "merge-base", "--is-ancestor", commit, "main"); code != 0 {
		t.Error("main does not hold the workspace's commit")
	}
	// A merged branch goes with the workspace.
	kept, err := Remove(context.Background(), ws)
	if err != nil || kept {
		t.Fatalf("remove: kept %v, %v", kept, err)
	}
	if _, err := os.Stat(ws.Path); !os.IsNotExist(err) {
		t.Error("the worktree is still there")
	}
	if _, code, _ := gitStatus(context.Background(), repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+ws.Branch); code == 0 {
		t.Error("the merged branch is still there")
	}
}

func TestMergeIntoABranchNotCheckedOut(t *testing.T) {
	repo := newRepo(t)
	run(t, repo, "branch", "release")
	ws := create(t, repo, wire.Workspace{Base: "release"})
	write(t, filepath.Join(ws.Path, "r.txt"), "r\n")
	if _, err := Commit(context.Background(), ws, "r"); err != nil {
		t.Fatal(err)
	}
	res, err := Merge(context.Background(), ws)
	if err != nil || !res.Merged {
		t.Fatalf("merge: %+v, %v", res, err)
	}
	if got := run(t, repo, "show", "release:r.txt"); got != "r" {
		t.Errorf("release:r.txt = %q", got)
	}
	if got := run(t, repo, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("the repository's own checkout moved to %s", got)
	}
}

func TestMergeConflictChangesNothing(t *testing.T) {
	repo := newRepo(t)
	ws := create(t, repo, wire.Workspace{})
	write(t, filepath.Join(ws.Path, "a.txt"), "one\nworkspace\nthree\n")
	if _, err := Commit(context.Background(), ws, "ours"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, "a.txt"), "one\nbase\nthree\n")
	run(t, repo, "commit", "--quiet", "-am", "theirs")
	before := run(t, repo, "rev-parse", "main")
	res, err := Merge(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if res.Merged || len(res.Conflicts) != 1 || res.Conflicts[0] != "a.txt" {
		t.Fatalf("merge: %+v, want a conflict in a.txt", res)
	}
	if after := run(t, repo, "rev-parse", "main"); after != before {
		t.Error("a conflicting merge moved main")
	}
	if read(t, filepath.Join(repo, "a.txt")) != "one\nbase\nthree\n" {
		t.Error("a conflicting merge changed the base's files")
	}
	// Unmerged work is not thrown away with the workspace.
	kept, err := Remove(context.Background(), ws)
	if err != nil || !kept {
		t.Fatalf("remove: kept %v, %v; want the unmerged branch kept", kept, err)
	}
}

func TestMergeRefusesADirtyBaseWorktree(t *testing.T) {
	repo := newRepo(t)
	ws := create(t, repo, wire.Workspace{})
	write(t, filepath.Join(ws.Path, "n.txt"), "n\n")
	if _, err := Commit(context.Background(), ws, "n"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, "a.txt"), "edited by hand\n")
	if _, err := Merge(context.Background(), ws); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("merge into a dirty checkout: %v, want conflict", err)
	}
	if read(t, filepath.Join(repo, "a.txt")) != "edited by hand\n" {
		t.Error("the person's uncommitted edit was touched")
	}
}

func TestMergeOfACommitBaseIsRefused(t *testing.T) {
	repo := newRepo(t)
	ws := create(t, repo, wire.Workspace{Base: run(t, repo, "rev-parse", "HEAD")})
	if _, err := Merge(context.Background(), ws); !errors.Is(err, wire.ErrBadRequest) {
		t.Fatalf("merge into a commit: %v, want bad_request", err)
	}
}

func TestHooksDoNotRun(t *testing.T) {
	repo := newRepo(t)
	ws := create(t, repo, wire.Workspace{})
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hooks := filepath.Join(repo, ".git", "hooks")
	write(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ntouch "+marker+"\n")
	os.Chmod(filepath.Join(hooks, "pre-commit"), 0o755)
	write(t, filepath.Join(ws.Path, "h.txt"), "h\n")
	if _, err := Commit(context.Background(), ws, "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a repository hook ran")
	}
}
