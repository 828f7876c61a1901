package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafePath matches, with errors.Is, every refusal of WriteBeneath and
// RemoveBeneath to write where a link or the folder's edge would take the
// write somewhere else.
var ErrUnsafePath = errors.New("unsafe path")

// PathError says why a write beneath a folder was refused.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return e.Path + " " + e.Reason }

// Is makes errors.Is(err, ErrUnsafePath) hold.
func (e *PathError) Is(target error) bool { return target == ErrUnsafePath }

// WriteBeneath replaces path, which must lie inside root, with data, as
// Write does (a temporary file in the same folder, renamed over it), making
// missing folders with mode 0755. Every folder between root and the file is
// opened from the one before it without following a symbolic link (openat2
// with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS where the kernel has it, else
// one O_NOFOLLOW step at a time), so a path an agent turned into a link
// after it was judged cannot take the write outside root. A file that has
// become a link, or that has other hard links, is refused; the rename
// itself never writes through one.
func WriteBeneath(root, path string, data []byte, perm fs.FileMode, sync bool) (err error) {
	dir, base, err := openParent(root, path, true)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer unix.Close(dir)
	if err := checkTarget(dir, base, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := "." + base + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(path), tmp))
	defer func() {
		if err != nil {
			f.Close()
			unix.Unlinkat(dir, tmp, 0)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err := fill(f, data, perm, sync); err != nil {
		return err
	}
	// Checked again at the last moment for a clear refusal; a swap after
	// this check only loses the link, as the rename replaces it.
	if err := checkTarget(dir, base, path); err != nil {
		return err
	}
	if err := unix.Renameat(dir, tmp, dir, base); err != nil {
		return err
	}
	if sync {
		unix.Fsync(dir)
	}
	return nil
}

// RemoveBeneath removes path, which must lie inside root, reached as
// WriteBeneath reaches it. A file that is missing is not an error; one that
// has become a link or a folder is refused.
func RemoveBeneath(root, path string) error {
	err := atTarget(root, path, func(dir int, base string) error {
		if err := unix.Unlinkat(dir, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// RemoveEmptyDirBeneath removes the folder path, which must lie inside
// root, reached as WriteBeneath reaches it, when it is empty. A missing
// folder is not an error; a folder that is not empty, or a link, is left,
// with the error.
func RemoveEmptyDirBeneath(root, path string) error {
	dir, base, err := openParent(root, path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		defer unix.Close(dir)
		err = unix.Unlinkat(dir, base, unix.AT_REMOVEDIR)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove folder %s: %w", path, err)
	}
	return nil
}

// CheckBeneath reports, as WriteBeneath would refuse it, whether path
// inside root is now reached through a link, is a link, is not a regular
// file or has other hard links. A missing file or folder passes: a write
// would make it. It lets a caller whose write someone else makes (an
// engine's CLI, after an allow) refuse a path that changed since it was
// judged.
func CheckBeneath(root, path string) error {
	return atTarget(root, path, nil)
}

// atTarget opens path's folder beneath root, checks path (checkTarget) and
// hands the folder and path's last element to do, if any. A missing folder
// is not an error, and do is not called.
func atTarget(root, path string, do func(dir int, base string) error) error {
	dir, base, err := openParent(root, path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := checkTarget(dir, base, path); err != nil {
		return err
	}
	if do == nil {
		return nil
	}
	return do(dir, base)
}

// checkTarget refuses a file that is a link, not a regular file, or has
// other hard links. A missing file passes.
func checkTarget(dir int, base, path string) error {
	var st unix.Stat_t
	err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &PathError{Path: path, Reason: "is a symbolic link: Corral does not write through links (it became one after the edit was judged?)"}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &PathError{Path: path, Reason: "is not a regular file"}
	case st.Nlink > 1:
		return &PathError{Path: path, Reason: fmt.Sprintf("has %d hard links: Corral does not write a file that is also elsewhere", st.Nlink)}
	}
	return nil
}

// openParent opens the folder that holds path, beneath root, and returns
// it with path's last element. With mkdir, missing folders are made.
func openParent(root, path string, mkdir bool) (dir int, base string, err error) {
	rel, err := relBeneath(root, path)
	if err != nil {
		return -1, "", err
	}
	relDir, base := filepath.Split(rel)
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", &fs.PathError{Op: "open", Path: root, Err: err}
	}
	relDir = strings.TrimSuffix(relDir, string(filepath.Separator))
	if relDir == "" {
		return rootFD, base, nil
	}
	defer unix.Close(rootFD)
	fd, err := openBeneath(rootFD, relDir)
	switch {
	case err == nil:
		return fd, base, nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
		// No openat2 here (or a sandbox forbids it), or folders to
		// make: one step at a time.
	default:
		return -1, "", linkError(filepath.Join(root, relDir), err)
	}
	fd, err = walk(rootFD, root, relDir, mkdir)
	if err != nil {
		return -1, "", err
	}
	return fd, base, nil
}

// walk opens relDir beneath the folder fd one element at a time, never
// following a link, making missing folders when mkdir is set.
func walk(fd int, root, relDir string, mkdir bool) (int, error) {
	cur, err := unix.Dup(fd)
	if err != nil {
		return -1, err
	}
	done := root
	for _, elem := range strings.Split(relDir, string(filepath.Separator)) {
		done = filepath.Join(done, elem)
		next, err := unix.Openat(cur, elem, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && mkdir {
			if err = unix.Mkdirat(cur, elem, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(cur, elem, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(cur)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return -1, &fs.PathError{Op: "open", Path: done, Err: fs.ErrNotExist}
			}
			return -1, linkError(done, err)
		}
		cur = next
	}
	return cur, nil
}

// linkError turns what the kernel says about a link or an escape into a
// PathError.
func linkError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return &PathError{Path: path, Reason: "is, or passes through, a symbolic link: Corral does not write through links"}
	case errors.Is(err, unix.ENOTDIR):
		return &PathError{Path: path, Reason: "is not a folder"}
	case errors.Is(err, unix.EXDEV):
		return &PathError{Path: path, Reason: "leads outside the worktree"}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// relBeneath returns path relative to root, refusing a path outside it.
func relBeneath(root, path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	rel, err := filepath.Rel(root, filepath.Clean(path))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", &PathError{Path: path, Reason: "is not inside " + root}
	}
	return rel, nil
}
