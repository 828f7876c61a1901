package worktree

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/pkg/hunks"
)

// ErrUnrevertible is returned by Revert for a change that cannot be put
// back (see Change.Unrevertible).
var ErrUnrevertible = errors.New("change cannot be reverted")

// Revert takes the hunks ids of ch back out of the worktree (all of them
// when ids is empty), working by context on the file as it is now, as
// hunks.Edit.Revert does: a file changed since fails with a
// *hunks.ConflictError and is left as it is. A rename is undone by moving
// the file back. The capture's index follows, so the revert is not
// reported as a change by the next After; the folders a command made that
// the revert leaves empty are removed, and those it makes again are the
// baseline's.
func (c *Capture) Revert(ch Change, ids []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch.Unrevertible != "" {
		return fmt.Errorf("revert %s: %s: %w", ch.Path, ch.Unrevertible, ErrUnrevertible)
	}
	defer func() {
		var ups []update // what the revert changes is the baseline, not news
		for _, p := range []string{ch.Path, ch.From} {
			if p != "" {
				c.refreshPath(p, &ups)
				c.pruneFolders(p)
				c.knowFolders(p)
			}
		}
	}()
	if ch.Kind == Renamed {
		from := c.abs(ch.From)
		if _, err := os.Lstat(from); err == nil {
			return fmt.Errorf("revert rename of %s: %s exists again", ch.Path, ch.From)
		}
		if err := os.MkdirAll(filepath.Dir(from), 0o755); err != nil {
			return err
		}
		return os.Rename(c.abs(ch.Path), from)
	}
	all := ch.Edit.IDs()
	if len(ids) == 0 {
		ids = all
	}
	if ch.TypeChanged && len(ids) != len(all) {
		return fmt.Errorf("revert %s: a file that became a symlink, or a symlink a file, is reverted whole, not hunk by hunk", ch.Path)
	}
	path := c.abs(ch.Path)
	current, mode, err := c.readCurrent(path, ch.Symlink)
	if err != nil {
		return err
	}
	if !current.Exists && ch.Mode != 0 {
		mode = ch.Mode // a deleted file comes back as it was
	}
	result, err := ch.Edit.Revert(current, ids)
	if err != nil {
		return fmt.Errorf("revert %s: %w", ch.Path, err)
	}
	if ch.TypeChanged {
		// The old content is the other kind of file: take the new one
		// away, then put the old one back.
		if ch.Symlink {
			if err := os.Remove(path); err != nil {
				return err
			}
			return hunks.WriteFileIn(c.root, path, hunks.Snapshot{}, result, cmp.Or(ch.Mode, 0o644))
		}
		if err := atomicfile.RemoveBeneath(c.root, path); err != nil {
			return err
		}
		return writeLink(path, hunks.Snapshot{}, result)
	}
	if ch.Symlink {
		return writeLink(path, current, result)
	}
	// Inside the worktree, through no link: the agent may have swapped a
	// folder on the way for one since the change was captured.
	return hunks.WriteFileIn(c.root, path, current, result, mode)
}

// pruneFolders removes the folders on rel's way that a command made and
// that are now empty, innermost first.
func (c *Capture) pruneFolders(rel string) {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if !c.folders[dir] || atomicfile.RemoveEmptyDirBeneath(c.root, c.abs(dir)) != nil {
			return // not a command's, or not empty
		}
		delete(c.folders, dir)
	}
}

// knowFolders takes the folders on rel's way that exist and the index
// lacks (a revert made them again) into the baseline.
func (c *Capture) knowFolders(rel string) {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if _, ok := c.folders[dir]; ok {
			continue
		}
		if info, err := os.Lstat(c.abs(dir)); err == nil && info.IsDir() {
			c.folders[dir] = false
		}
	}
}

// readCurrent reads the file (or symlink target) at path as it is now.
func (c *Capture) readCurrent(path string, link bool) (hunks.Snapshot, fs.FileMode, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return hunks.Snapshot{}, 0o644, nil
	}
	if err != nil {
		return hunks.Snapshot{}, 0, err
	}
	if link != (info.Mode()&fs.ModeSymlink != 0) {
		return hunks.Snapshot{}, 0, fmt.Errorf("revert %s: it is no longer a %s", path, map[bool]string{true: "symlink", false: "regular file"}[link])
	}
	data, err := readContent(path, info)
	if err != nil {
		return hunks.Snapshot{}, 0, err
	}
	return hunks.Present(data), info.Mode().Perm(), nil
}

func writeLink(path string, current, result hunks.Snapshot) error {
	if current.Exists {
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	if !result.Exists {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.Symlink(string(result.Data), path)
}
