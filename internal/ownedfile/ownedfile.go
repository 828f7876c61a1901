// Package ownedfile opens the files and folders Corral trusts — the state
// folder, its lock, the bearer token, the credentials file — only when they
// belong to the user running Corral and nobody else can change them, and
// never through a symbolic link another user planted.
//
// Another local user must not be able to steer a supervisor by creating its
// state folder first (on a shared /tmp, say) or by leaving a link where a
// token is read: a folder or file owned by someone else, or writable by
// group or others, is refused with an *UnsafeError that says what is wrong
// and how to fix it.
package ownedfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// UnsafeError says why a path is not trusted.
type UnsafeError struct {
	Path   string
	Reason string // "is owned by uid 1001, not by uid 0 (you)", ...
	Fix    string // what to do about it
}

func (e *UnsafeError) Error() string {
	msg := fmt.Sprintf("%s %s", e.Path, e.Reason)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// ErrUnsafe matches every *UnsafeError with errors.Is.
var ErrUnsafe = errors.New("unsafe path")

// Is makes errors.Is(err, ErrUnsafe) hold.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// checkOwner refuses st unless the running user owns it and group and
// others cannot write it (nor, when private, read it).
func checkOwner(path string, st *unix.Stat_t, private bool, what string) error {
	me := uint32(os.Geteuid())
	if st.Uid != me {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("is owned by uid %d, not by uid %d (you)", st.Uid, me),
			Fix: fmt.Sprintf("another user may have planted it: remove it, or use %s of your own", what)}
	}
	mask, may := uint32(0o022), "change"
	if private {
		mask, may = 0o077, "read"
	}
	if mode := uint32(st.Mode) & 0o777; mode&mask != 0 { // Mode is 16 bits on some systems.
		want := "700"
		if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
			want = "600"
		}
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("has mode %#o: others may %s it", mode, may),
			Fix: fmt.Sprintf("it must be 0%s (chmod %s %s)", want, want, path)}
	}
	return nil
}

// Dir checks that path is a folder the running user owns and that group and
// others cannot write. A symbolic link is followed only when the running
// user owns the link itself (a link in a shared folder is otherwise
// another user's to point anywhere).
func Dir(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		if st.Uid != uint32(os.Geteuid()) {
			return checkOwner(path, &st, false, "a folder")
		}
		if err := unix.Stat(path, &st); err != nil {
			return &fs.PathError{Op: "stat", Path: path, Err: err}
		}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return &UnsafeError{Path: path, Reason: "is not a folder", Fix: "move it away"}
	}
	return checkOwner(path, &st, false, "a folder")
}

// EnsureDir makes path (and its missing parents) with mode 0700 when it is
// missing, then checks it as Dir does.
func EnsureDir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	return Dir(path)
}

// Open opens a regular file without following a symbolic link in its last
// component, and refuses it unless the running user owns it and group and
// others can neither write it nor, when private, read it. flag may hold
// os.O_CREATE (perm then applies); the file is created by the running user,
// so a file that was missing passes.
func Open(path string, flag int, perm os.FileMode, private bool) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &UnsafeError{Path: path, Reason: "is a symbolic link", Fix: "replace it with the file itself"}
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, &UnsafeError{Path: path, Reason: "is not a regular file", Fix: "move it away"}
	}
	if err := checkOwner(path, &st, private, "a file"); err != nil {
		f.Close()
		return nil, err
	}
	// Reads block as usual: O_NONBLOCK only kept a FIFO from stalling the
	// open.
	if err := unix.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadPrivate reads a file only its owner, the running user, may read: at
// most max bytes (more is an error).
func ReadPrivate(path string, max int64) ([]byte, error) {
	f, err := Open(path, os.O_RDONLY, 0, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return raw, nil
}

// Socket checks a unix socket's path before it is replaced or used: when
// something is there, it must be a socket the running user owns. It reports
// whether something is there.
func Socket(path string) (exists bool, err error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return true, &UnsafeError{Path: path, Reason: "exists and is not a socket", Fix: "move it away"}
	}
	if st.Uid != uint32(os.Geteuid()) {
		return true, &UnsafeError{Path: path, Reason: fmt.Sprintf("is a socket of uid %d, not yours (uid %d)", st.Uid, os.Geteuid()),
			Fix: "another user may be waiting for your requests: remove it, or use a state folder of your own"}
	}
	return true, nil
}
