package runner

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCopyTreeSkipsWhatVanishes: entries an engine still running removes
// between the listing of their folder and their copy (Claude Code's lock
// and temporary files) are left out, and everything else is copied. The
// walk is wrapped to remove them at that point, which is where a running
// CLI's rename lands when the copy races it.
func TestCopyTreeSkipsWhatVanishes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove string // removed when the walk reaches the folder's first entry
	}{
		{"a file", "claude/.claude.json.lock"},
		{"a symlink", "claude/.link"},
		{"a folder", "claude/.tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := filepath.Join(t.TempDir(), "engine"), filepath.Join(t.TempDir(), "engine")
			files := map[string]string{
				"claude/.claude.json":                   "{}",
				"claude/.claude.json.lock":              "",
				"claude/.tmp/x":                         "partial",
				"claude/projects/-w/conversation.jsonl": "{\"type\":\"user\"}\n",
				"claude-conversations.json":             "{}",
			}
			for name, content := range files {
				path := filepath.Join(src, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(".claude.json", filepath.Join(src, "claude", ".link")); err != nil {
				t.Fatal(err)
			}
			// The listing of claude/ is read before its entries are
			// visited: removing an entry when the walk reaches the
			// first (".claude.json") makes it vanish in between.
			walk := func(root string, fn fs.WalkDirFunc) error {
				return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
					if path == filepath.Join(root, "claude", ".claude.json") {
						if err := os.RemoveAll(filepath.Join(root, tc.remove)); err != nil {
							t.Fatal(err)
						}
					}
					return fn(path, d, err)
				})
			}

			if err := copyTreeBy(walk, src, dst); err != nil {
				t.Fatalf("copyTree: %v", err)
			}
			for _, name := range []string{"claude/.claude.json", "claude/projects/-w/conversation.jsonl", "claude-conversations.json"} {
				want := files[name]
				if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
					t.Errorf("copy of %s = %q, %v; want %q", name, got, err, want)
				}
			}
			if _, err := os.Lstat(filepath.Join(dst, tc.remove)); !os.IsNotExist(err) {
				t.Errorf("%s, removed before its copy, is in the copy: %v", tc.remove, err)
			}
		})
	}
}

// TestCopyTreeOfNothing: a missing source is an empty tree; a source that
// cannot be read is an error.
func TestCopyTreeOfNothing(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "engine")
	if err := copyTree(filepath.Join(t.TempDir(), "missing"), dst); err != nil {
		t.Fatalf("copyTree of a missing folder: %v", err)
	}
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Errorf("a copy of nothing made %s: %v", dst, err)
	}
	if os.Geteuid() == 0 {
		return // root reads any folder
	}
	src := filepath.Join(t.TempDir(), "engine")
	if err := os.MkdirAll(filepath.Join(src, "locked"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "locked"), 0o700) })
	if err := copyTree(src, filepath.Join(t.TempDir(), "engine")); err == nil {
		t.Error("copyTree of an unreadable folder succeeded")
	}
}
