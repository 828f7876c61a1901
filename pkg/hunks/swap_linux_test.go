package hunks

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/corral-dev/corral/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// TestWritesStayInsideWhilePathsAreSwapped is finding 3 of issue 18, as
// reproduced in auto mode: while Corral writes edits (read the file, apply,
// write, as the runner does), the agent swaps a file for a link to a file
// outside the worktree, and a folder for a link to a folder outside, over
// and over. Whatever the interleaving, nothing outside is written; a write
// that meets a link is refused with ErrUnsafePath.
func TestWritesStayInsideWhilePathsAreSwapped(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "dir")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("outside\n"), 0o644)
	os.WriteFile(filepath.Join(root, "file"), []byte("a\n"), 0o644)
	os.Symlink(secret, filepath.Join(root, "file.other"))
	os.Symlink(outside, filepath.Join(root, "dir.other"))
	os.WriteFile(filepath.Join(root, "dir", "secret"), []byte("a\n"), 0o644)

	// The swapper exchanges "file" and "dir" with their links, each swap
	// one atomic exchange, as fast as it can: the paths always exist, half
	// the time as links out of the worktree.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		swap := func(name string) {
			err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, name+".other"), unix.AT_FDCWD, filepath.Join(root, name), unix.RENAME_EXCHANGE)
			if err != nil {
				t.Errorf("exchange %s: %v", name, err)
			}
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			swap("file")
			swap("dir")
		}
	}()

	var refused, written int
	for i := range 150 {
		for _, p := range []string{filepath.Join(root, "file"), filepath.Join(root, "dir", "secret")} {
			real, current, mode, err := ReadFile(p)
			if err != nil {
				continue // a folder that was a link as it was read
			}
			next := Present(append(append([]byte{}, current.Data...), byte('0'+i%10), '\n'))
			switch err := WriteFileIn(root, real, current, next, mode); {
			case err == nil:
				written++
			case errors.Is(err, atomicfile.ErrUnsafePath):
				refused++
			}
		}
	}
	close(stop)
	wg.Wait()

	if raw, _ := os.ReadFile(secret); string(raw) != "outside\n" {
		t.Fatalf("the file outside the worktree was written: %q", raw)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files appeared outside the worktree: %v", entries)
	}
	t.Logf("%d writes, %d refused", written, refused)
}
