package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// layout makes a worktree and, beside it, an outside folder with a secret
// file, and returns both.
func layout(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "work"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644)
	os.WriteFile(filepath.Join(root, "sub", "file"), []byte("inside\n"), 0o644)
	return root, outside
}

func TestWriteBeneath(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		path  string // relative to root
		says  string // "" when the write succeeds
	}{
		{"a file", nil, "sub/file", ""},
		{"a new file in new folders", nil, "a/b/c/new", ""},
		{"a file at the top", nil, "top", ""},
		{"the file is a link out", func(t *testing.T, root, outside string) {
			os.Remove(filepath.Join(root, "sub", "file"))
			os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "sub", "file"))
		}, "sub/file", "symbolic link"},
		{"the file is a link inside", func(t *testing.T, root, outside string) {
			os.Symlink("file", filepath.Join(root, "sub", "alias"))
		}, "sub/alias", "symbolic link"},
		{"a folder is a link out", func(t *testing.T, root, outside string) {
			os.RemoveAll(filepath.Join(root, "sub"))
			os.Symlink(outside, filepath.Join(root, "sub"))
		}, "sub/secret", "symbolic link"},
		{"a folder is a link, deeper", func(t *testing.T, root, outside string) {
			os.MkdirAll(filepath.Join(root, "a"), 0o755)
			os.Symlink(outside, filepath.Join(root, "a", "b"))
		}, "a/b/c/new", "symbolic link"},
		{"a hard link to outside", func(t *testing.T, root, outside string) {
			os.Remove(filepath.Join(root, "sub", "file"))
			if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(root, "sub", "file")); err != nil {
				t.Fatalf("a hard link within one temporary folder: %v", err)
			}
		}, "sub/file", "hard links"},
		{"a folder where the file goes", func(t *testing.T, root, outside string) {
			os.Remove(filepath.Join(root, "sub", "file"))
			os.Mkdir(filepath.Join(root, "sub", "file"), 0o755)
		}, "sub/file", "not a regular file"},
		{"a path outside", nil, "../outside/secret", "not inside"},
		{"the root itself", nil, ".", "not inside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := layout(t)
			if tc.setup != nil {
				tc.setup(t, root, outside)
			}
			path := filepath.Join(root, tc.path)
			err := WriteBeneath(root, path, []byte("new\n"), 0o640, true)
			if secret, _ := os.ReadFile(filepath.Join(outside, "secret")); string(secret) != "outside\n" {
				t.Fatalf("the outside file was written: %q", secret)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Fatalf("files appeared outside: %v", entries)
			}
			if tc.says != "" {
				if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("error %v, want a refusal saying %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			if raw, _ := os.ReadFile(path); err != nil || string(raw) != "new\n" || fi.Mode().Perm() != 0o640 {
				t.Fatalf("written %q, %v %v", raw, fi, err)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(leftovers) != 0 {
				t.Fatalf("temporary files left: %v", leftovers)
			}
		})
	}
}

func TestRemoveBeneath(t *testing.T) {
	root, outside := layout(t)
	if err := RemoveBeneath(root, filepath.Join(root, "sub", "file")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "sub", "file")); !os.IsNotExist(err) {
		t.Fatal("not removed")
	}
	if err := RemoveBeneath(root, filepath.Join(root, "sub", "file")); err != nil {
		t.Fatalf("a missing file: %v", err)
	}
	if err := RemoveBeneath(root, filepath.Join(root, "no", "such", "folder")); err != nil {
		t.Fatalf("a missing folder: %v", err)
	}
	os.RemoveAll(filepath.Join(root, "sub"))
	os.Symlink(outside, filepath.Join(root, "sub"))
	if err := RemoveBeneath(root, filepath.Join(root, "sub", "secret")); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("removal through a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatal("the outside file was removed")
	}
}

func TestRemoveEmptyDirBeneath(t *testing.T) {
	root, outside := layout(t)
	os.MkdirAll(filepath.Join(root, "empty"), 0o755)
	os.MkdirAll(filepath.Join(outside, "empty"), 0o755)
	if err := RemoveEmptyDirBeneath(root, filepath.Join(root, "empty")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "empty")); !os.IsNotExist(err) {
		t.Fatal("not removed")
	}
	if err := RemoveEmptyDirBeneath(root, filepath.Join(root, "empty")); err != nil {
		t.Fatalf("a missing folder: %v", err)
	}
	if err := RemoveEmptyDirBeneath(root, filepath.Join(root, "sub")); err == nil {
		t.Fatal("a folder with a file in it was removed")
	}
	os.Symlink(filepath.Join(outside, "empty"), filepath.Join(root, "link"))
	if err := RemoveEmptyDirBeneath(root, filepath.Join(root, "link")); err == nil {
		t.Fatal("a link was removed as a folder")
	}
	os.RemoveAll(filepath.Join(root, "sub"))
	os.Symlink(outside, filepath.Join(root, "sub"))
	if err := RemoveEmptyDirBeneath(root, filepath.Join(root, "sub", "empty")); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("removal through a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "empty")); err != nil {
		t.Fatal("the outside folder was removed")
	}
}

// TestWalkWithoutOpenat2 covers the step-at-a-time resolution used where
// the kernel has no openat2.
func TestWalkWithoutOpenat2(t *testing.T) {
	root, outside := layout(t)
	fd, err := openRoot(t, root)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFD(fd)
	got, err := walk(fd, root, "x/y", true)
	if err != nil {
		t.Fatal(err)
	}
	closeFD(got)
	if fi, err := os.Stat(filepath.Join(root, "x", "y")); err != nil || !fi.IsDir() {
		t.Fatalf("folders not made: %v", err)
	}
	os.Symlink(outside, filepath.Join(root, "x", "link"))
	if _, err := walk(fd, root, "x/link/z", true); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("walk through a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "z")); !os.IsNotExist(err) {
		t.Fatal("a folder was made outside")
	}
	if _, err := walk(fd, root, "no/such", false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("walk to a missing folder: %v", err)
	}
}

func openRoot(t *testing.T, root string) (int, error) {
	t.Helper()
	return unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func closeFD(fd int) { unix.Close(fd) }

// TestCheckBeneath: what WriteBeneath would refuse, CheckBeneath reports,
// and a path a write would make passes.
func TestCheckBeneath(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(root, "dir", "file"), filepath.Join(outside, "file")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{
		os.Symlink(filepath.Join(outside, "file"), filepath.Join(root, "link")),
		os.Symlink(outside, filepath.Join(root, "dirlink")),
		os.Link(filepath.Join(outside, "file"), filepath.Join(root, "hard")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"dir/file", true},
		{"dir/missing", true},
		{"missing/file", true},
		{"link", false},
		{"dirlink/file", false},
		{"hard", false},
		{"../elsewhere", false},
	} {
		err := CheckBeneath(root, filepath.Join(root, tc.path))
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrUnsafePath)) {
			t.Errorf("CheckBeneath(%s) = %v, want ok %v", tc.path, err, tc.ok)
		}
	}
}
