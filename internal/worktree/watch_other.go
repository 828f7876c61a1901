//go:build !linux

package worktree

import "errors"

// watcher is unavailable here: the capture walks the tree instead.
type watcher struct{}

func newWatcher(string) (*watcher, error) { return nil, errors.New("no inotify on this system") }

func (w *watcher) add(string) error                    { return nil }
func (w *watcher) forget(string)                       {}
func (w *watcher) drain(map[string]bool) (bool, error) { return true, nil }
func (w *watcher) close() error                        { return nil }
