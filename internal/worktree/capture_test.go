package worktree_test

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/worktree"
	"github.com/corral-dev/corral/pkg/hunks"
)

// tree writes files (path → content; a content starting "->" makes a
// symlink to the rest) under a new worktree, a git repository with one
// commit and a .gitignore, and returns its root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("git"); err == nil {
		git(t, root, "init", "-q")
		git(t, root, "add", "-A")
		git(t, root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
	}
	return root
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// snapshot reads every file of the tree but .git, for comparing trees.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		if info.IsDir() {
			if info.Name() == ".git" {
				return filepath.SkipDir
			}
			out[rel+"/"] = "folder"
			return nil
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out[rel] = "->" + target
			return nil
		}
		data, _ := os.ReadFile(p)
		out[rel] = string(data)
		return nil
	})
	return out
}

func open(t *testing.T, root string, walk bool) *worktree.Capture {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	// Another process may hold every inotify instance or watch the system
	// allows this user (fs.inotify.max_user_instances, max_user_watches):
	// a package tested beside this one with a hundred live sessions does.
	// The capture then walks, correctly; to test the watching, wait for
	// the instances to come free.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c, err := worktree.Open(root, worktree.Options{Store: store, Walk: walk})
		if err != nil {
			t.Fatal(err)
		}
		why := c.Unwatched()
		if walk && why != nil {
			t.Fatalf("a capture asked to walk says why it does not watch: %v", why)
		}
		if walk || c.Watching() {
			t.Cleanup(func() { c.Close() })
			return c
		}
		c.Close()
		if !errors.Is(why, syscall.EMFILE) && !errors.Is(why, syscall.ENOSPC) || time.Now().After(deadline) {
			t.Fatalf("the capture walks the tree: %v", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var base = map[string]string{
	"README.md":      "# project\n\nsome text\n",
	"src/main.go":    "package main\n\nfunc main() {\n\tprintln(\"a\")\n}\n",
	"src/util.go":    "package main\n\nfunc util() {}\n",
	".gitignore":     "*.log\nbuild/\n",
	"build/old.bin":  "\x00\x01\x02old",
	"docs/a.txt":     "alpha\n",
	"docs/b.txt":     "beta\n",
	"link":           "->README.md",
	"big/lines.txt":  strings.Repeat("same line\n", 50) + "first\n" + strings.Repeat("filler\n", 50) + "second\n",
	"untracked.note": "not committed\n",
}

type want struct {
	kind worktree.ChangeKind
	path string
	from string
}

func TestCommandWritesBecomeChanges(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   []want
	}{
		{"echo creates a file", "echo hi > notes.txt", []want{{worktree.Created, "notes.txt", ""}}},
		{"sed -i rewrites a file", "sed -i 's/println/print/' src/main.go", []want{{worktree.Modified, "src/main.go", ""}}},
		{"append to a file", "echo more >> README.md", []want{{worktree.Modified, "README.md", ""}}},
		{"rm deletes", "rm docs/a.txt", []want{{worktree.Deleted, "docs/a.txt", ""}}},
		{"mv renames", "mv docs/b.txt docs/c.txt", []want{{worktree.Renamed, "docs/c.txt", "docs/b.txt"}}},
		{"ignored files too", "echo log > out.log && printf '\\000\\377' > build/new.bin", []want{{worktree.Created, "build/new.bin", ""}, {worktree.Created, "out.log", ""}}},
		{"binary rewrite", "printf '\\000\\001\\002new' > build/old.bin", []want{{worktree.Modified, "build/old.bin", ""}}},
		{"untracked file", "echo changed > untracked.note", []want{{worktree.Modified, "untracked.note", ""}}},
		{"new folders", "mkdir -p gen/a/b && echo x > gen/a/b/c.txt && echo y > gen/top.txt", []want{{worktree.Created, "gen/a/b/c.txt", ""}, {worktree.Created, "gen/top.txt", ""}}},
		{"rm -r a folder", "rm -r docs", []want{{worktree.Deleted, "docs/a.txt", ""}, {worktree.Deleted, "docs/b.txt", ""}}},
		{"a folder renamed", "mv docs papers", []want{{worktree.Renamed, "papers/a.txt", "docs/a.txt"}, {worktree.Renamed, "papers/b.txt", "docs/b.txt"}}},
		{"symlink retargeted", "ln -sfn src/main.go link", []want{{worktree.Modified, "link", ""}}},
		{"a symlink replaced by a file", "rm link && echo text > link", []want{{worktree.Modified, "link", ""}}},
		{"a file replaced by a symlink", "rm README.md && ln -s src/main.go README.md", []want{{worktree.Modified, "README.md", ""}}},
		{"a folder replaced by a file", "rm -r docs && echo x > docs", []want{{worktree.Deleted, "docs/a.txt", ""}, {worktree.Deleted, "docs/b.txt", ""}, {worktree.Created, "docs", ""}}},
		{"a file replaced by a folder", "rm README.md && mkdir -p README.md/in && echo x > README.md/in/f", []want{{worktree.Deleted, "README.md", ""}, {worktree.Created, "README.md/in/f", ""}}},
		{"a file replaced by a folder of the same name's file", "rm -f docs/a.txt && mkdir docs/a.txt && echo inner > docs/a.txt/a.txt", []want{{worktree.Deleted, "docs/a.txt", ""}, {worktree.Created, "docs/a.txt/a.txt", ""}}},
		{"a file moved into new folders", "mkdir -p new/deeper && mv docs/a.txt new/deeper/a.txt", []want{{worktree.Renamed, "new/deeper/a.txt", "docs/a.txt"}}},
		{"git's own folder is left out", "git add -A >/dev/null 2>&1; echo x > .git/scratch", nil},
		{"touch without a change", "touch README.md src/util.go", nil},
		{"write the same bytes", "cp README.md /tmp/$$.r && cat /tmp/$$.r > README.md && rm /tmp/$$.r", nil},
	}
	for _, walk := range []bool{false, true} {
		mode := map[bool]string{false: "inotify", true: "walk"}[walk]
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				root := tree(t, base)
				c := open(t, root, walk)
				before := snapshot(t, root)
				if err := c.Before(); err != nil {
					t.Fatal(err)
				}
				sh(t, root, tt.script)
				changes, err := c.After()
				if err != nil {
					t.Fatal(err)
				}
				var got []want
				for _, ch := range changes {
					got = append(got, want{ch.Kind, ch.Path, ch.From})
					if ch.Kind != worktree.Renamed && ch.Edit == nil {
						t.Errorf("%s %s has no edit: %s", ch.Kind, ch.Path, ch.Unrevertible)
					}
				}
				if !slices.Equal(got, tt.want) {
					t.Fatalf("changes %v, want %v", got, tt.want)
				}
				// Every change reverts, last to first, leaving the tree
				// as it was, folders included; the reverts are not
				// reported as changes.
				for _, ch := range slices.Backward(changes) {
					if err := c.Revert(ch, nil); err != nil {
						t.Fatalf("revert %s %s: %v", ch.Kind, ch.Path, err)
					}
				}
				if after := snapshot(t, root); !maps.Equal(before, after) {
					t.Fatalf("after reverting every change the tree differs:\nbefore %q\nafter  %q", before, after)
				}
				if err := c.Before(); err != nil {
					t.Fatal(err)
				}
				if again, err := c.After(); err != nil || len(again) != 0 {
					t.Fatalf("after the reverts: %v, %v; want no change", again, err)
				}
			})
		}
	}
}

// TestChangesBetweenWindowsAreBaseline: what changes between an After and
// the next Before (the engine's reviewed edits, a person) is not reported.
func TestChangesBetweenWindowsAreBaseline(t *testing.T) {
	for _, walk := range []bool{false, true} {
		root := tree(t, base)
		c := open(t, root, walk)
		sh(t, root, "echo edited > docs/a.txt && rm docs/b.txt")
		if err := c.Before(); err != nil {
			t.Fatal(err)
		}
		sh(t, root, "echo again >> docs/a.txt")
		changes, err := c.After()
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0].Path != "docs/a.txt" || changes[0].Kind != worktree.Modified {
			t.Fatalf("walk=%v: changes %+v, want only docs/a.txt modified", walk, changes)
		}
		if err := c.Revert(changes[0], nil); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(filepath.Join(root, "docs/a.txt")); string(data) != "edited\n" {
			t.Fatalf("walk=%v: reverted to %q, want the baseline %q", walk, data, "edited\n")
		}
	}
}

// TestDeletedFileComesBackWithItsMode: an executable removed by a command
// and put back by the revert is executable again.
func TestDeletedFileComesBackWithItsMode(t *testing.T) {
	for _, walk := range []bool{false, true} {
		root := tree(t, base)
		script := filepath.Join(root, "docs/a.txt")
		if err := os.Chmod(script, 0o750); err != nil {
			t.Fatal(err)
		}
		c := open(t, root, walk)
		c.Before()
		sh(t, root, "rm docs/a.txt")
		changes, err := c.After()
		if err != nil || len(changes) != 1 || changes[0].Kind != worktree.Deleted {
			t.Fatalf("walk=%v: changes %+v, %v", walk, changes, err)
		}
		if err := c.Revert(changes[0], nil); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Stat(script); err != nil || info.Mode().Perm() != 0o750 {
			t.Fatalf("walk=%v: put back as %v, %v; want -rwxr-x---", walk, info.Mode(), err)
		}
	}
}

// TestRevertOneHunk reverts one of two hunks a command made.
func TestRevertOneHunk(t *testing.T) {
	root := tree(t, base)
	c := open(t, root, false)
	c.Before()
	sh(t, root, "sed -i 's/^first$/FIRST/; s/^second$/SECOND/' big/lines.txt")
	changes, err := c.After()
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || len(changes[0].Edit.Hunks) != 2 {
		t.Fatalf("changes %+v, want one edit with two hunks", changes)
	}
	if err := c.Revert(changes[0], []string{"h2"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(root, "big/lines.txt"))
	if !bytes.Contains(data, []byte("FIRST\n")) || !bytes.Contains(data, []byte("\nsecond\n")) {
		t.Fatalf("after reverting h2: %q", data)
	}
}

// TestBigFileOverTheLimit is reported but cannot be reverted.
func TestBigFileOverTheLimit(t *testing.T) {
	root := tree(t, map[string]string{"data.bin": strings.Repeat("x", 2000)})
	os.RemoveAll(filepath.Join(root, ".git")) // not a git worktree: no copy in git
	c, err := worktree.Open(root, worktree.Options{Store: filepath.Join(t.TempDir(), "s"), MaxContent: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Before()
	sh(t, root, "echo y >> data.bin")
	changes, err := c.After()
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Unrevertible == "" || changes[0].Edit != nil {
		t.Fatalf("changes %+v, want one unrevertible change", changes)
	}
	if err := c.Revert(changes[0], nil); err == nil {
		t.Fatal("reverting a change without its previous version succeeded")
	}
}

// TestTrackedContentComesFromGit: files git holds are not copied, and
// still revert.
func TestTrackedContentComesFromGit(t *testing.T) {
	testenv.NeedGit(t)
	root := tree(t, base)
	store := filepath.Join(t.TempDir(), "store")
	c, err := worktree.Open(root, worktree.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := hunks.BlobID([]byte(base["src/main.go"]))
	if _, err := os.Stat(filepath.Join(store, id[:2], id[2:])); err == nil {
		t.Fatal("a tracked file's content was copied into the store")
	}
	ignored := hunks.BlobID([]byte(base["build/old.bin"]))
	if _, err := os.Stat(filepath.Join(store, ignored[:2], ignored[2:])); err != nil {
		t.Fatal("an ignored file's content was not kept")
	}
	c.Before()
	sh(t, root, "echo gone > src/main.go")
	changes, _ := c.After()
	if len(changes) != 1 {
		t.Fatalf("changes %+v", changes)
	}
	if err := c.Revert(changes[0], nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "src/main.go")); string(data) != base["src/main.go"] {
		t.Fatalf("reverted to %q", data)
	}
}

// TestRevertStaysInsideTheWorktree (issue 18, finding 3): a folder on the
// path of a captured change swapped for a link out of the worktree before
// the revert: the revert is refused and nothing outside is written.
func TestRevertStaysInsideTheWorktree(t *testing.T) {
	root := tree(t, base)
	c := open(t, root, false)
	c.Before()
	sh(t, root, "sed -i 's/^first$/FIRST/' big/lines.txt")
	changes, err := c.After()
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 {
		t.Fatalf("changes %+v, want one", changes)
	}
	outside := t.TempDir()
	data, _ := os.ReadFile(filepath.Join(root, "big/lines.txt"))
	if err := os.WriteFile(filepath.Join(outside, "lines.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "big"), filepath.Join(root, "big.moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "big")); err != nil {
		t.Fatal(err)
	}
	if err := c.Revert(changes[0], nil); !errors.Is(err, atomicfile.ErrUnsafePath) {
		t.Fatalf("revert through a link: %v, want atomicfile.ErrUnsafePath", err)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "lines.txt")); !bytes.Equal(got, data) {
		t.Fatalf("the file outside the worktree was written: %q", got)
	}
}
