package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// gitTimeout bounds each git call; they read git's index or one object.
const gitTimeout = 30 * time.Second

// gitBlobs is the set of blobs git's index holds for a worktree: a file
// whose content is one of them need not be copied into the store, since
// git gives it back.
type gitBlobs struct {
	root string
	ids  map[string]bool
}

// readGitBlobs lists the blobs of root's git index; nil when root is not a
// git worktree or git is missing (then every version is kept in the store).
func readGitBlobs(root string) *gitBlobs {
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "--stage", "-z").Output()
	if err != nil {
		return nil
	}
	g := &gitBlobs{root: root, ids: map[string]bool{}}
	// Each record: "<mode> <blob> <stage>\t<path>\x00".
	for _, rec := range bytes.Split(out, []byte{0}) {
		fields := bytes.SplitN(rec, []byte{' '}, 3)
		if len(fields) == 3 && len(fields[1]) == 40 {
			g.ids[string(fields[1])] = true
		}
	}
	return g
}

func (g *gitBlobs) has(id string) bool { return g != nil && g.ids[id] }

// get reads a blob from git's object store.
func (g *gitBlobs) get(id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", g.root, "cat-file", "blob", id).Output()
	if err != nil {
		return nil, fmt.Errorf("git cat-file blob %s: %w", id, err)
	}
	return out, nil
}
