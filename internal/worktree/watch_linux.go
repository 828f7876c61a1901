package worktree

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchMask is every change to a folder's entries or a file's content.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR

// watcher follows every folder of a worktree with inotify. The kernel
// queues an event as a write happens, so once a command has exited every
// change it made is in the queue: draining it without blocking tells what
// changed, at a cost that does not grow with the tree.
type watcher struct {
	root string
	fd   int
	wds  map[int32]string // watch → folder, relative to root ("" is root)
	dirs map[string]int32
	buf  []byte
}

func newWatcher(root string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	return &watcher{root: root, fd: fd, wds: map[int32]string{}, dirs: map[string]int32{}, buf: make([]byte, 64<<10)}, nil
}

// add watches the folder rel. Past the system's limit on watches it fails
// (ENOSPC), and the capture falls back to walking the tree.
func (w *watcher) add(rel string) error {
	if _, ok := w.dirs[rel]; ok {
		return nil
	}
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(w.root, filepath.FromSlash(rel)), watchMask)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // gone already; its parent's event covers it
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", rel, err)
	}
	w.wds[int32(wd)] = rel
	w.dirs[rel] = int32(wd)
	return nil
}

// forget drops the watches of rel and every folder under it, as when the
// folder moved away: events under it would carry its old name.
func (w *watcher) forget(rel string) {
	for dir, wd := range w.dirs {
		if dir == rel || strings.HasPrefix(dir, rel+"/") {
			unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.dirs, dir)
			delete(w.wds, wd)
		}
	}
}

// drain reads every queued event and adds the paths they name to dirty. It
// reports overflow when the kernel dropped events (its queue was full) or
// the root itself went away: then only a walk of the tree can tell.
func (w *watcher) drain(dirty map[string]bool) (overflow bool, err error) {
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EAGAIN) {
			return overflow, nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return overflow, fmt.Errorf("read inotify events: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			nameBytes := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				overflow = true
				continue
			}
			dir, ok := w.wds[ev.Wd]
			if !ok {
				continue
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(w.wds, ev.Wd)
				if w.dirs[dir] == ev.Wd {
					delete(w.dirs, dir)
				}
				continue
			}
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				if dir == "" {
					overflow = true
				}
				continue
			}
			name := strings.TrimRight(string(nameBytes), "\x00")
			p := name
			if dir != "" {
				p = dir + "/" + name
			}
			if ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&unix.IN_MOVED_FROM != 0 {
				w.forget(p)
			}
			dirty[p] = true
		}
	}
}

func (w *watcher) close() error { return unix.Close(w.fd) }
