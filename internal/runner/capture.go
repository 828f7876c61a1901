package runner

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/worktree"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
)

// CaptureFolder is the content store of the shell capture, in the session
// folder: the previous versions of the worktree's files that git does not
// hold, so a captured change can be shown and reverted.
const CaptureFolder = "capture"

// shellCapture makes what shell commands write in the worktree reviewable
// (docs/hunks.md, "The review rule for captured changes"): it brings the
// worktree's index up to date just before an allowed shell call runs and
// reports every change once the last running shell call has finished (or
// the turn ends, for an engine that never says a call finished). The
// runner stages each change as an auto-applied edit that the reviewer can
// revert hunk by hunk until the turn ends.
//
// The index is built on a goroutine of its own when the session starts
// (outside readonly mode), so a big worktree does not hold up the start;
// the first shell call waits for it.
type shellCapture struct {
	log      *zap.Logger
	cwd, dir string
	opening  sync.Once
	ready    chan struct{} // closed once the index is built (or cannot be)
	c        *worktree.Capture
	err      error // why there is no capture, when c is nil

	mu      sync.Mutex
	running map[string]bool // shell calls between Before and After, by tool id
	closed  bool
}

// newShellCapture captures the worktree at cwd, keeping contents in the
// session folder dir. Nothing is read until open.
func newShellCapture(cwd, dir string, log *zap.Logger) *shellCapture {
	return &shellCapture{log: log, cwd: cwd, dir: dir, ready: make(chan struct{}), running: map[string]bool{}}
}

// open starts indexing the worktree, once. A session folder inside the
// worktree would be captured as the worktree's own change at every event;
// such a session gets no capture, and says so.
func (sc *shellCapture) open() {
	sc.opening.Do(func() {
		switch {
		case sc.cwd == "":
			sc.err = fmt.Errorf("the session has no worktree")
		case inside(sc.dir, sc.cwd):
			sc.err = fmt.Errorf("the session folder %s is inside the worktree %s", sc.dir, sc.cwd)
		}
		if sc.err != nil {
			sc.log.Info("shell writes are not captured for review", zap.Error(sc.err))
			close(sc.ready)
			return
		}
		go func() {
			defer close(sc.ready)
			c, err := worktree.Open(sc.cwd, worktree.Options{Store: filepath.Join(sc.dir, CaptureFolder)})
			if err != nil {
				sc.err = err
				sc.log.Warn("shell writes are not captured for review: the worktree could not be indexed", zap.Error(err))
				return
			}
			sc.c = c
		}()
	})
}

// inside reports whether path is root or inside it.
func inside(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// capture returns the capture once it is ready, nil when there is none.
func (sc *shellCapture) capture() *worktree.Capture {
	sc.open()
	<-sc.ready
	return sc.c
}

// started is called once a shell call is allowed, just before it runs.
// The first of the calls running at once takes the baseline; what changed
// since the last report (the engine's reviewed edits, a person's editor)
// is in it, unreported.
func (sc *shellCapture) started(toolID string) {
	c := sc.capture()
	if c == nil {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return
	}
	if sc.running[toolID] {
		return // Permit, then the engine's toolStarted: one call
	}
	if len(sc.running) == 0 {
		if err := c.Before(); err != nil {
			sc.log.Warn("shell capture: the worktree's baseline could not be taken", zap.Error(err))
			return
		}
	}
	sc.running[toolID] = true
}

// finished is called when a tool call has finished. Once no shell call
// runs any more, it returns what the calls changed.
func (sc *shellCapture) finished(toolID string) []worktree.Change {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.running[toolID] {
		return nil
	}
	delete(sc.running, toolID)
	if len(sc.running) > 0 {
		return nil
	}
	return sc.afterLocked()
}

// turnEnded returns what shell calls the engine never reported finished
// changed; the turn's end is the latest point they can be attributed to.
func (sc *shellCapture) turnEnded() []worktree.Change {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.running) == 0 {
		return nil
	}
	clear(sc.running)
	return sc.afterLocked()
}

func (sc *shellCapture) afterLocked() []worktree.Change {
	if sc.closed {
		return nil
	}
	changes, err := sc.c.After()
	if err != nil {
		sc.log.Warn("shell capture: the worktree's changes could not be read", zap.Error(err))
	}
	return changes
}

// revert takes hunks ids of ch (all when empty) back out of the worktree.
func (sc *shellCapture) revert(ch worktree.Change, ids []string) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return fmt.Errorf("the session is closing")
	}
	return sc.c.Revert(ch, ids)
}

// close waits for an index under way to be built and stops following the
// worktree.
func (sc *shellCapture) close() {
	sc.opening.Do(func() { close(sc.ready) }) // never opened: nothing to wait for
	<-sc.ready
	c := sc.c
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return
	}
	sc.closed = true
	if c != nil {
		c.Close()
	}
}

// capturedEdits are the hunk edits a change is shown and reverted as. A
// pure rename, which has no hunks of its own, is shown as the old path
// deleted and the new one created; each is reverted by the capture, as
// every captured change is, so that its index follows: a revert the index
// missed would be reported as a change by the next shell call running at
// the time.
func capturedEdits(sc *shellCapture, ch worktree.Change, root string) []capturedEdit {
	if ch.Kind == worktree.Renamed && ch.Edit == nil {
		now, mode, err := renamedContent(filepath.Join(root, filepath.FromSlash(ch.Path)), ch.Symlink)
		if err != nil {
			return nil
		}
		created, err1 := hunks.Diff(ch.Path, hunks.Snapshot{}, now)
		deleted, err2 := hunks.Diff(ch.From, now, hunks.Snapshot{})
		if err1 != nil || err2 != nil {
			return nil
		}
		// The old path first: reverting last to first then takes the new
		// path away before the old one comes back, which matters when
		// one lies on the other's way (a file moved into a folder of
		// its own name).
		return append(capturedEdits(sc, worktree.Change{Kind: worktree.Deleted, Path: ch.From, Edit: deleted, Symlink: ch.Symlink, Mode: mode}, root),
			capturedEdits(sc, worktree.Change{Kind: worktree.Created, Path: ch.Path, Edit: created, Symlink: ch.Symlink}, root)...)
	}
	if ch.Edit == nil || len(ch.Edit.Hunks) == 0 {
		return nil
	}
	ce := capturedEdit{path: filepath.Join(root, filepath.FromSlash(ch.Path)), edit: ch.Edit}
	if ch.Unrevertible == "" {
		ce.undo = func(ids []string) error { return sc.revert(ch, ids) }
	} else {
		ce.undo = func([]string) error {
			return fmt.Errorf("%s: %w", ch.Unrevertible, worktree.ErrUnrevertible)
		}
	}
	return []capturedEdit{ce}
}

// renamedContent reads a renamed file's content as it is now (a regular
// file's bytes, a symlink's target) and its permission bits.
func renamedContent(path string, link bool) (hunks.Snapshot, fs.FileMode, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return hunks.Snapshot{}, 0, err
	}
	var data []byte
	if link {
		var target string
		target, err = os.Readlink(path)
		data = []byte(target)
	} else {
		data, err = os.ReadFile(path)
	}
	return hunks.Present(data), info.Mode().Perm(), err
}

// capturedEdit is one edit to stage for a captured change, and how to take
// its hunks back out.
type capturedEdit struct {
	path string
	edit *hunks.Edit
	undo func(ids []string) error
}

// stageCaptured records what shell calls changed as auto-applied edits:
// hunkStaged, then editApplied by "command", each revertible hunk by hunk
// until the turn ends. toolID is the call the changes are attributed to,
// empty when the turn's end found them.
func (r *Runner) stageCaptured(toolID string, changes []worktree.Change) {
	root := r.Spec().Cwd
	var edits []capturedEdit
	for _, ch := range changes {
		edits = append(edits, capturedEdits(r.shell, ch, root)...)
	}
	// Deletions (a rename's old path among them) first, as the capture
	// lists its changes: in an order they could have been made in, so
	// that rejecting them newest first always finds its way (a folder
	// that became a file, a file moved out of a folder then replaced by
	// a file).
	sort.SliceStable(edits, func(i, j int) bool {
		return edits[i].edit.Kind == hunks.KindDelete && edits[j].edit.Kind != hunks.KindDelete
	})
	for _, ce := range edits {
		id, seq := r.ids.next("e")
		se := r.review.stage(id, seq, toolID, ce.path, ce.edit, true, ce.undo)
		r.emit(event.HunkStaged, event.HunkStagedData{EditID: id, ToolID: toolID, Path: r.review.display(ce.path), Auto: true, Edit: ce.edit})
		r.review.recordApplied(se, "command", ce.edit.IDs(), false, "")
	}
}
