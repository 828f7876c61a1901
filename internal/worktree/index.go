package worktree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// entry is what the index knows of one file (a regular file or a symlink,
// whose content is its target).
type entry struct {
	stat statKey
	blob string // git blob id of the content
	kept bool   // the content is in the store
}

// statKey is what changes when a file's content may have changed: a write
// moves mtime and ctime, a replacement the inode.
type statKey struct {
	size         int64
	mtime, ctime int64 // nanoseconds
	ino          uint64
	mode         fs.FileMode
}

func keyOf(info fs.FileInfo) statKey {
	k := statKey{size: info.Size(), mode: info.Mode(), mtime: info.ModTime().UnixNano()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		k.ino = uint64(st.Ino)
		k.ctime = ctime(st)
	}
	return k
}

// skipDir names the folders never captured: git's own store (a commit
// changes it; the worktree files it changes are captured).
func skipDir(rel string) bool {
	return rel == ".git" || strings.HasSuffix(rel, "/.git")
}

// tracked reports whether info is a kind of file the index keeps.
func tracked(info fs.FileInfo) bool {
	return info.Mode().IsRegular() || info.Mode()&fs.ModeSymlink != 0
}

// walk calls fn for every regular file and symlink under root/rel (rel ""
// is the whole tree), with its slash-separated path relative to root, and
// dir for every folder it enters.
func walk(root, rel string, dir func(rel string) error, fn func(rel string, info fs.FileInfo) error) error {
	start := filepath.Join(root, filepath.FromSlash(rel))
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		r, rerr := filepath.Rel(root, p)
		if rerr != nil {
			return rerr
		}
		r = filepath.ToSlash(r)
		if r == "." {
			r = ""
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone while walking: its events follow
			}
			return err
		}
		if d.IsDir() {
			if skipDir(r) {
				return filepath.SkipDir
			}
			if dir != nil {
				return dir(r)
			}
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !tracked(info) {
			return nil
		}
		return fn(r, info)
	})
}

// readContent returns a file's content: its bytes, or a symlink's target.
func readContent(path string, info fs.FileInfo) ([]byte, error) {
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		return []byte(target), err
	}
	return os.ReadFile(path)
}
