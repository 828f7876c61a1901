package runner

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/worktree"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
)

// CaptureFolder is the content store of the shell capture, in the session
// folder: the previous versions of the worktree's files that git does not
// hold, so a captured change can be shown and reverted.
const CaptureFolder = "capture"

// shellCapture makes every change to the worktree during a turn
// reviewable (docs/hunks.md, "The review rule for captured changes"),
// whatever process made it. It takes the baseline when a turn starts and
// looks again at every point where it can say who changed what: just
// before an allowed shell call runs and before the session waits for a
// person (what changed since the last look was made outside any tool
// call: a process a command left running, a daemon), once the last running
// shell call has finished (the calls' changes), and when the turn ends.
// The runner stages each change as an auto-applied edit that the reviewer
// can revert hunk by hunk until the next turn starts.
//
// Writes that went through review already are not reported again: the
// engine's accepted edits are expected from the verdict until the edit
// call finishes, the runner's own writes (accepted hunks, a hunk taken
// back out) around the write, and the capture takes exactly those paths
// into its baseline (worktree.Capture.Expect and Settle).
//
// The index is built on a goroutine of its own when the session starts
// (outside readonly mode), so a big worktree does not hold up the start;
// the first shell call waits for it, and a turn that starts before it is
// built takes the index as its baseline.
type shellCapture struct {
	log      *zap.Logger
	cwd, dir string
	opening  sync.Once
	opened   atomic.Bool   // open was called: ready closes
	ready    chan struct{} // closed once the index is built (or cannot be)
	c        *worktree.Capture
	err      error // why there is no capture, when c is nil

	mu      sync.Mutex
	running map[string]bool // shell calls since their look, by tool id
	// pending are the accepted edits the engine is about to write, by
	// tool call id, until the call finishes or the turn ends.
	pending map[string][]expectedWrite
	closed  bool
}

// expectedWrite is one file a reviewed writer is about to write.
type expectedWrite struct {
	rel     string
	content hunks.Snapshot
}

// newShellCapture captures the worktree at cwd, keeping contents in the
// session folder dir. Nothing is read until open.
func newShellCapture(cwd, dir string, log *zap.Logger) *shellCapture {
	return &shellCapture{log: log, cwd: cwd, dir: dir, ready: make(chan struct{}), running: map[string]bool{}, pending: map[string][]expectedWrite{}}
}

// open starts indexing the worktree, once. A session folder inside the
// worktree would be captured as the worktree's own change at every event;
// such a session gets no capture, and says so.
func (sc *shellCapture) open() {
	sc.opening.Do(func() {
		sc.opened.Store(true)
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
			if err := c.Unwatched(); err != nil {
				sc.log.Info("shell writes are found by walking the worktree at every command, which costs more on a big tree", zap.Error(err))
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

// built returns the capture once an index under way is built, without
// starting one: nil when the session has none (readonly mode, no
// worktree).
func (sc *shellCapture) built() *worktree.Capture {
	if !sc.opened.Load() {
		return nil
	}
	<-sc.ready
	return sc.c
}

// turnStarted takes the worktree as the turn's baseline: what changed
// between turns is the person's, not the turn's. An index still being
// built is not waited for: it becomes the baseline once built.
func (sc *shellCapture) turnStarted() {
	select {
	case <-sc.ready:
	default:
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.c == nil || sc.closed {
		return
	}
	if err := sc.c.Before(); err != nil {
		sc.log.Warn("shell capture: the turn's baseline could not be taken", zap.Error(err))
	}
}

// started is called when a shell call is allowed, just before it runs
// (permitted), or when the engine says it started. When no other call
// runs, the capture looks at the worktree: what changed since the last
// look is returned, made outside any tool call. A call the engine
// announced before asking runs only once allowed, so the verdict looks
// again: what changed while it waited was not its.
func (sc *shellCapture) started(toolID string, permitted bool) []worktree.Change {
	c := sc.capture()
	if c == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed || (sc.running[toolID] && !permitted) {
		return nil // Permit, then the engine's toolStarted: one call
	}
	var outside []worktree.Change
	if sc.aloneLocked(toolID) {
		outside = sc.afterLocked()
	}
	sc.running[toolID] = true
	return outside
}

// aloneLocked reports whether no shell call but toolID (which has not run
// yet) is running.
func (sc *shellCapture) aloneLocked(toolID string) bool {
	return len(sc.running) == 0 || len(sc.running) == 1 && sc.running[toolID]
}

// denied is called when a shell call was refused: it never ran, so what
// changed since it was announced is not its.
func (sc *shellCapture) denied(toolID string) []worktree.Change {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.endLocked(toolID)
}

// endLocked takes toolID off the running calls; once none runs, it looks
// at the worktree and returns what changed.
func (sc *shellCapture) endLocked(toolID string) []worktree.Change {
	if !sc.running[toolID] {
		return nil
	}
	delete(sc.running, toolID)
	if len(sc.running) > 0 {
		return nil
	}
	return sc.afterLocked()
}

// outside returns what changed since the last look when no shell call but
// toolID (waiting for a person) runs; while another runs, what changes is
// its. The runner shows it before the session waits for a person.
func (sc *shellCapture) outside(toolID string) []worktree.Change {
	if sc.built() == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.aloneLocked(toolID) {
		return nil
	}
	return sc.afterLocked()
}

// finished is called when a tool call has finished; ok says it succeeded.
// An edit call's expected writes are settled; once no shell call runs any
// more, it returns what the calls changed.
func (sc *shellCapture) finished(toolID string, ok bool) []worktree.Change {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.settleLocked(toolID, ok)
	return sc.endLocked(toolID)
}

// turnEnded looks at the worktree once more after the engine has stopped,
// settling the edits the engine never reported finished. byCommand says
// shell calls the engine never reported finished were running: the
// changes are theirs as much as anyone's.
func (sc *shellCapture) turnEnded() (changes []worktree.Change, byCommand bool) {
	if sc.built() == nil {
		return nil, false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for id := range sc.pending {
		sc.settleLocked(id, false)
	}
	byCommand = len(sc.running) > 0
	clear(sc.running)
	return sc.afterLocked(), byCommand
}

func (sc *shellCapture) afterLocked() []worktree.Change {
	if sc.closed || sc.c == nil {
		return nil
	}
	changes, err := sc.c.After()
	if err != nil {
		sc.log.Warn("shell capture: the worktree's changes could not be read", zap.Error(err))
	}
	return changes
}

// expect announces that the engine's call toolID is about to write
// content at path (absolute), as the reviewer accepted it. An engine that
// asks about one call file by file names the files' calls TOOL#N (Codex's
// apply_patch): they are settled when TOOL finishes.
func (sc *shellCapture) expect(toolID, path string, content hunks.Snapshot) {
	c := sc.built()
	if c == nil {
		return
	}
	rel, ok := sc.rel(path)
	if !ok {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return
	}
	c.Expect(rel, content)
	sc.pending[toolID] = append(sc.pending[toolID], expectedWrite{rel: rel, content: content})
}

// settleLocked takes the writes expected of toolID (and its TOOL#N
// parts) into the baseline; written says the call succeeded.
func (sc *shellCapture) settleLocked(toolID string, written bool) {
	for id, writes := range sc.pending {
		if id != toolID && !strings.HasPrefix(id, toolID+"#") {
			continue
		}
		delete(sc.pending, id)
		if sc.closed || sc.c == nil {
			continue
		}
		for _, w := range writes {
			if err := sc.c.Settle(w.rel, w.content, written); err != nil {
				sc.log.Warn("shell capture: an edit's write could not be taken into the baseline", zap.String("path", w.rel), zap.Error(err))
			}
		}
	}
}

// write runs a write the runner makes itself at path (absolute), which
// puts content there, with no look at the worktree in between: it is
// taken into the baseline, never reported.
func (sc *shellCapture) write(path string, content hunks.Snapshot, write func() error) error {
	c := sc.built()
	rel, ok := sc.rel(path)
	if c == nil || !ok {
		return write()
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return write()
	}
	return c.Write(rel, content, write)
}

// rel makes an absolute path slash-separated and relative to the
// worktree, when it lies inside it (also through a link on the worktree's
// own path).
func (sc *shellCapture) rel(path string) (string, bool) {
	for _, root := range []string{sc.cwd, evalOr(sc.cwd)} {
		for _, p := range []string{path, evalOr(path)} {
			if r, err := filepath.Rel(root, p); err == nil && r != "." && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				return filepath.ToSlash(r), true
			}
		}
	}
	return "", false
}

// evalOr resolves links in path, or returns it as it is.
func evalOr(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
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

// Who wrote a captured change, as editApplied's by says.
const (
	byCommand = "command" // a shell call (toolId), or calls the turn's end found running
	byOutside = "outside" // no tool call: a process a command left running, a daemon
)

// stageCaptured records captured changes as auto-applied edits:
// hunkStaged, then editApplied by by, each revertible hunk by hunk until
// the next turn starts. toolID is the call the changes are attributed to, empty
// when none is.
func (r *Runner) stageCaptured(toolID, by string, changes []worktree.Change) {
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
		r.review.recordApplied(se, by, ce.edit.IDs(), false, "")
	}
}
