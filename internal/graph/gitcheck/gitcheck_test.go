package gitcheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testenv"
)

func TestParseStatus(t *testing.T) {
	out := "# branch.oid abc\x00" +
		"1 .M N... 100644 100644 100644 1111 2222 a b.txt\x00" +
		"1 M. N... 100644 100644 100644 1111 2222 héllo wörld.txt\x00" +
		"2 R. N... 100644 100644 100644 1111 1111 R100 new name.go\x00old name.go\x00" +
		"u UU N... 100644 100644 100644 100644 1 2 3 conflict.txt\x00" +
		"? untracked dir/file with\nnewline\x00" +
		"! ignored.log\x00"
	got, err := ParseStatus([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Kind: Ordinary, XY: ".M", Path: "a b.txt"},
		{Kind: Ordinary, XY: "M.", Path: "héllo wörld.txt"},
		{Kind: Renamed, XY: "R.", Path: "new name.go", Orig: "old name.go"},
		{Kind: Unmerged, XY: "UU", Path: "conflict.txt"},
		{Kind: Untracked, Path: "untracked dir/file with\nnewline"},
		{Kind: Ignored, Path: "ignored.log"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestParseStatusRefusesDamagedOutput(t *testing.T) {
	for name, out := range map[string]string{
		"unknown kind":      "x foo\x00",
		"too few fields":    "1 .M N... 100644\x00",
		"rename no source":  "2 R. N... 100644 100644 100644 1 1 R100 new\x00",
		"empty record":      "\x00\x00",
		"bad XY":            "1 M N... 100644 100644 100644 1111 2222 a\x00",
		"untracked no path": "? \x00",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseStatus([]byte(out)); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("1 .M N... 100644 100644 100644 1111 2222 a b.txt\x00"))
	f.Add([]byte("2 R. N... 100644 100644 100644 1 1 R100 new\x00old\x00"))
	f.Add([]byte("? x\x00! y\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		entries, err := ParseStatus(out)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Path == "" {
				t.Fatalf("an entry without a path: %+v", e)
			}
			if e.Kind == Renamed && e.Orig == "" {
				t.Fatalf("a rename without its source: %+v", e)
			}
		}
	})
}

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@t"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repo makes a repository with a few committed files and an ignore rule.
func repo(t *testing.T) string {
	t.Helper()
	testenv.NeedGit(t)
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a b.txt", "one\n")
	write(t, dir, "héllo.txt", "salut\n")
	write(t, dir, "old name.go", "package x\n")
	write(t, dir, "keep.txt", "same\n")
	write(t, dir, "pre-dirty.txt", "v1\n")
	write(t, dir, ".gitignore", "*.log\nbuild/\n")
	write(t, dir, "stale.log", "old log\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "init")
	// Dirty before the node starts: only a change made during the node
	// counts.
	write(t, dir, "pre-dirty.txt", "v2\n")
	return dir
}

func TestVerifyChecksClaimsAgainstGit(t *testing.T) {
	dir := repo(t)
	ctx := context.Background()
	base, err := Snapshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// What the node does.
	write(t, dir, "a b.txt", "two\n")
	write(t, dir, "héllo.txt", "bonjour\n")
	run(t, dir, "mv", "old name.go", "new name.go")
	write(t, dir, "src/new file.go", "package src\n")
	write(t, dir, "build/out.log", "built\n")
	claims := []string{"a b.txt", "héllo.txt", "new name.go", "old name.go", "src/", "build/out.log",
		"keep.txt", "pre-dirty.txt", "stale.log", "missing.txt", "../escape.txt", "/etc/passwd"}
	v, err := Verify(ctx, dir, base, claims)
	if err != nil {
		t.Fatal(err)
	}
	wantOK := []string{"a b.txt", "héllo.txt", "new name.go", "old name.go", "src/", "build/out.log"}
	if !slices.Equal(v.Confirmed, wantOK) {
		t.Errorf("confirmed %q\nwant %q", v.Confirmed, wantOK)
	}
	var falsePaths []string
	for _, f := range v.False {
		falsePaths = append(falsePaths, f[:strings.LastIndex(f, ":")])
	}
	wantFalse := []string{"keep.txt", "pre-dirty.txt", "stale.log", "missing.txt", "../escape.txt", "/etc/passwd"}
	if !slices.Equal(falsePaths, wantFalse) {
		t.Errorf("false %q\nwant %q", v.False, wantFalse)
	}
}

func TestVerifySeesCommitsMadeDuringTheNode(t *testing.T) {
	dir := repo(t)
	ctx := context.Background()
	base, err := Snapshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "keep.txt", "changed and committed\n")
	run(t, dir, "commit", "-q", "-am", "node work")
	v, err := Verify(ctx, dir, base, []string{"keep.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Confirmed) != 1 {
		t.Fatalf("a committed change was not seen: %+v", v)
	}
}

func TestClaimsFromASubfolder(t *testing.T) {
	dir := repo(t)
	ctx := context.Background()
	write(t, dir, "pkg/x.go", "package pkg\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "pkg")
	sub := filepath.Join(dir, "pkg")
	base, err := Snapshot(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "pkg/x.go", "package pkg // changed\n")
	v, err := Verify(ctx, sub, base, []string{"x.go"})
	if err != nil || len(v.Confirmed) != 1 {
		t.Fatalf("a claim relative to a subfolder: %+v %v", v, err)
	}
}

func TestNotAGitWorktree(t *testing.T) {
	testenv.NeedGit(t)
	if _, err := Snapshot(context.Background(), t.TempDir()); err != ErrNotGit {
		t.Fatalf("snapshot outside git: %v, want ErrNotGit", err)
	}
}

func TestWorktreesCommitsAndMerges(t *testing.T) {
	dir := repo(t)
	ctx := context.Background()
	run(t, dir, "commit", "-q", "-am", "clean")
	wt := filepath.Join(t.TempDir(), "U1")
	if err := AddWorktree(ctx, dir, wt, "corral/r1/U1"); err != nil {
		t.Fatal(err)
	}
	if err := AddWorktree(ctx, dir, wt, "corral/r1/U1"); err != nil {
		t.Fatalf("adding an existing worktree again: %v", err)
	}
	write(t, wt, "feature.txt", "from U1\n")
	made, err := CommitAll(ctx, wt, "U1")
	if err != nil || !made {
		t.Fatalf("commit: %v %v", made, err)
	}
	if made, _ := CommitAll(ctx, wt, "U1 again"); made {
		t.Fatal("a commit with nothing to commit")
	}
	if err := Merge(ctx, dir, "corral/r1/U1", "merge U1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "feature.txt")); string(got) != "from U1\n" {
		t.Fatalf("merged file holds %q", got)
	}
	// A conflicting branch is not merged and leaves the worktree clean.
	wt2 := filepath.Join(t.TempDir(), "U2")
	if err := AddWorktree(ctx, dir, wt2, "corral/r1/U2"); err != nil {
		t.Fatal(err)
	}
	write(t, wt2, "keep.txt", "U2's version\n")
	CommitAll(ctx, wt2, "U2")
	write(t, dir, "keep.txt", "main's version\n")
	run(t, dir, "commit", "-q", "-am", "main moves on")
	if err := Merge(ctx, dir, "corral/r1/U2", "merge U2"); err == nil {
		t.Fatal("a conflicting merge succeeded")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(got) != "main's version\n" {
		t.Fatalf("after an aborted merge keep.txt holds %q", got)
	}
	_ = time.Now
}
