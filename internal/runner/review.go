package runner

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// review keeps the session's staged edits and the reviewer's decisions on
// their hunks (a review-mode edit's until its turn ends, an auto-applied
// edit's until the next turn starts), writes what the decisions say
// (the accepted part of an edit, an auto-mode hunk taken back out), and
// adds up what each turn changed for its turnEnded summary. It records
// hunkDecided and editApplied; hunkStaged is the runner's to record, after
// it has said the session waits for review.
type review struct {
	cwd  string // the worktree: for the paths shown, and Corral's own writes stay inside it
	emit func(event.Type, any)
	// own, when set, runs each write the review makes itself: the shell
	// capture takes it as reviewed instead of reporting it again.
	own ownWrites

	mu    sync.Mutex
	edits map[string]*stagedEdit
	// writing are the edits left whole to the engine whose call has not
	// finished: only then is an edit known to be written.
	writing []*stagedEdit
	tally   *turnTally // the running turn's, nil between turns
}

// stagedEdit is an edit waiting for hunk decisions until its turn ends,
// or, auto-applied, open to rejects until the next turn starts.
type stagedEdit struct {
	id     string
	seq    int64 // orders edits oldest first
	toolID string
	path   string // absolute
	edit   *hunks.Edit
	auto   bool
	// undo takes written hunks back out; nil means by the file's content
	// (a captured shell change is reverted by the capture, which knows
	// binary files, symlinks and its own index).
	undo func(ids []string) error
	// safe says the path was inside the worktree, reached through no
	// link, and no link itself when the edit was staged: if it is not so
	// when the engine would write it, the write is refused.
	safe bool
	// decisions, decided and unwritten are guarded by review.mu.
	decisions map[string]hunkDecision
	decided   chan struct{} // closed when every hunk has a decision
	// unwritten says why an edit recorded as applied by the engine is not
	// in the file after all (its write failed); it can no longer be
	// decided on.
	unwritten string
}

type hunkDecision struct {
	accept bool
	note   string
	by     string
}

// turnTally is what a turn's applied edits changed.
type turnTally struct {
	files          map[string]bool
	added, removed int
}

// ownWrites runs the writes the review makes itself (shellCapture).
type ownWrites interface {
	write(path string, content hunks.Snapshot, write func() error) error
}

func newReview(cwd string, emit func(event.Type, any), own ownWrites) *review {
	return &review{cwd: cwd, emit: emit, own: own, edits: map[string]*stagedEdit{}}
}

// write puts next where current was at path (resolved), telling own.
func (rv *review) write(path string, current, next hunks.Snapshot, mode fs.FileMode) error {
	write := func() error { return hunks.WriteFileIn(rv.cwd, path, current, next, mode) }
	if rv.own == nil {
		return write()
	}
	return rv.own.write(path, next, write)
}

// display shows a path relative to the worktree when it is inside it.
func (rv *review) display(p string) string {
	if rel, err := filepath.Rel(rv.cwd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// beginTurn closes the previous turn's edits to further decisions and
// starts the tally of a turn.
func (rv *review) beginTurn() {
	rv.mu.Lock()
	clear(rv.edits)
	rv.writing = nil
	rv.tally = &turnTally{files: map[string]bool{}}
	rv.mu.Unlock()
}

// endTurn closes the turn's review-mode edits to further decisions and
// returns what the turn changed. Its auto-applied edits (auto mode's, and
// every captured change) stay open to rejects until the next turn starts:
// the turn's last look at the worktree finds changes just before the turn
// ends, and a reviewer mostly looks once it has.
func (rv *review) endTurn() turnTally {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	for id, se := range rv.edits {
		if !se.auto || se.unwritten != "" {
			delete(rv.edits, id)
		}
	}
	t := rv.tally
	rv.tally = nil
	if t == nil {
		return turnTally{}
	}
	return *t
}

// stage opens edit ed of the file at path (absolute) for decisions. In
// auto mode every hunk is accepted at once (and may be rejected, which
// takes it back out of the file, until the next turn starts).
func (rv *review) stage(id string, seq int64, toolID, path string, ed *hunks.Edit, auto bool, undo func(ids []string) error) *stagedEdit {
	se := &stagedEdit{id: id, seq: seq, toolID: toolID, path: path, edit: ed, auto: auto, undo: undo,
		decisions: map[string]hunkDecision{}, decided: make(chan struct{}),
		safe: atomicfile.CheckBeneath(rv.cwd, path) == nil}
	if auto {
		for _, h := range ed.Hunks {
			se.decisions[h.ID] = hunkDecision{accept: true, by: "auto"}
		}
		close(se.decided)
	}
	rv.mu.Lock()
	rv.edits[id] = se
	rv.mu.Unlock()
	return se
}

// wait returns once every hunk of se has a decision; when ctx ends first
// (the engine withdrew the call) the undecided hunks are rejected as
// cancelled.
func (rv *review) wait(ctx context.Context, se *stagedEdit) {
	select {
	case <-se.decided:
	case <-ctx.Done():
		rv.rejectPending(se, "cancelled", "")
		<-se.decided
	}
}

// verdict carries out the decisions on se once they are all made: the
// whole edit is the engine's to write, none of it is written, or Corral
// writes the accepted hunks itself and refuses the engine's write.
func (rv *review) verdict(se *stagedEdit) engine.Verdict {
	display := rv.display(se.path)
	var accepted, rejected, notes []string
	rv.mu.Lock()
	for _, h := range se.edit.Hunks {
		d := se.decisions[h.ID]
		if d.accept {
			accepted = append(accepted, h.ID)
		} else {
			rejected = append(rejected, h.ID)
		}
		if d.note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", h.ID, d.note))
		}
	}
	rv.mu.Unlock()
	switch {
	case len(rejected) == 0:
		// The engine's CLI writes the file and follows links: a path
		// swapped for a link (or a folder on it for one) while the edit
		// waited for review would take the write out of the worktree.
		if se.safe {
			if err := atomicfile.CheckBeneath(rv.cwd, se.path); err != nil {
				rv.emit(event.EditApplied, event.EditAppliedData{EditID: se.id, Path: display, By: "corral", Hunks: []string{}, Conflict: err.Error()})
				return engine.Verdict{Message: fmt.Sprintf("The reviewer accepted this edit to %s, but the path changed while it waited (%v); nothing was written.", display, err)}
			}
		}
		rv.mu.Lock()
		rv.writing = append(rv.writing, se)
		rv.mu.Unlock()
		rv.recordApplied(se, "engine", accepted, false, "")
		return engine.Verdict{Allow: true}
	case len(accepted) == 0:
		return engine.Verdict{Message: "The reviewer rejected every hunk of this edit to " + display + "; nothing was written." + notesText(notes)}
	default:
		return rv.applyPartial(se, display, accepted, rejected, notes)
	}
}

// engineFinished is told that the engine's call toolID (with its TOOL#N
// parts) finished, ok or not. An edit it was to write is recorded as
// applied from the verdict on, so that shells see it at once; when the
// call failed (or was stopped) and the file does not hold the edit, the
// write never landed (a command had replaced a folder on its path by a
// file, the disk was full), and the edit is recorded as reverted, with the
// engine's reason as its conflict: the log never shows an edit the
// worktree lacks.
func (rv *review) engineFinished(toolID string, ok bool, why string) {
	rv.mu.Lock()
	var ended []*stagedEdit
	still := rv.writing[:0]
	for _, se := range rv.writing {
		switch {
		case se.toolID != toolID && !strings.HasPrefix(se.toolID, toolID+"#"):
			still = append(still, se)
		case !ok:
			ended = append(ended, se) // in verdict order, oldest first
		}
	}
	clear(rv.writing[len(still):])
	rv.writing = still
	rv.mu.Unlock()
	for _, se := range ended {
		if holds(se.path, se.edit) {
			continue
		}
		conflict := "the engine's write failed"
		if why != "" {
			conflict += ": " + why
		}
		rv.mu.Lock()
		se.unwritten = conflict
		rv.mu.Unlock()
		rv.recordApplied(se, "engine", se.edit.IDs(), true, conflict)
	}
}

// holds reports whether the file at path has the new version of ed.
func holds(path string, ed *hunks.Edit) bool {
	_, current, _, err := hunks.ReadFile(path)
	if err != nil {
		return false
	}
	if !current.Exists {
		return ed.NewBlob == ""
	}
	return hunks.BlobID(current.Data) == ed.NewBlob
}

// finalRule says when decisions become final, for the errors that refuse
// a late one.
const finalRule = "a review-mode edit's decisions are final once its turn ends, an auto-applied edit's once the next turn starts or the session's runner stops"

func notesText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return " Reviewer's notes: " + strings.Join(notes, "; ") + "."
}

// applyPartial writes the accepted hunks onto the file as it is now, by
// context, and refuses the engine's own write.
func (rv *review) applyPartial(se *stagedEdit, display string, accepted, rejected, notes []string) engine.Verdict {
	real, current, mode, err := hunks.ReadFile(se.path)
	if err == nil {
		var next hunks.Snapshot
		next, err = se.edit.Apply(current, accepted)
		if err == nil {
			err = rv.write(real, current, next, mode)
		}
	}
	if err != nil {
		conflict := err.Error()
		rv.emit(event.EditApplied, event.EditAppliedData{EditID: se.id, Path: display, By: "corral", Hunks: []string{}, Conflict: conflict})
		return engine.Verdict{Message: fmt.Sprintf("The reviewer accepted hunks %s of this edit to %s, but they no longer apply to the file as it is now (%s); nothing was written. Rejected: %s.%s",
			strings.Join(accepted, ", "), display, conflict, strings.Join(rejected, ", "), notesText(notes))}
	}
	rv.recordApplied(se, "corral", accepted, false, "")
	return engine.Verdict{Applied: true, Message: fmt.Sprintf(
		"The reviewer accepted only part of this edit to %s. Corral applied hunks %s itself; hunks %s were rejected and not written. Do not retry the same edit; read the file to see its current content.%s",
		display, strings.Join(accepted, ", "), strings.Join(rejected, ", "), notesText(notes))}
}

// recordApplied emits editApplied and adds the lines to the turn's tally.
func (rv *review) recordApplied(se *stagedEdit, by string, ids []string, reverted bool, conflict string) {
	added, removed := 0, 0
	for _, h := range se.edit.Hunks {
		for _, id := range ids {
			if h.ID == id {
				added += h.Added
				removed += h.Removed
			}
		}
	}
	rv.mu.Lock()
	if t := rv.tally; t != nil {
		t.files[se.path] = true
		if reverted {
			t.added -= added
			t.removed -= removed
		} else {
			t.added += added
			t.removed += removed
		}
	}
	rv.mu.Unlock()
	if ids == nil {
		ids = []string{}
	}
	rv.emit(event.EditApplied, event.EditAppliedData{EditID: se.id, Path: rv.display(se.path), By: by, Hunks: ids, Reverted: reverted, Added: added, Removed: removed, Conflict: conflict})
}

// decide records a person's decision on one hunk. editID may be empty when
// hunkID is EDIT/HUNK, when exactly one edit waits for decisions, or, when
// none waits, when the turn (or the last, until the next starts) has
// applied exactly one edit in auto mode. In auto mode a reject takes the
// hunk back out of the file at once.
func (rv *review) decide(editID, hunkID, decision, note string) (event.HunkDecidedData, error) {
	var accept bool
	switch decision {
	case command.DecisionAccept:
		accept = true
	case command.DecisionReject:
	default:
		return event.HunkDecidedData{}, wire.Errorf(wire.CodeBadRequest, "decideHunk needs decision accept or reject, not %q", decision)
	}
	if e, h, ok := strings.Cut(hunkID, "/"); ok && editID == "" {
		editID, hunkID = e, h
	}
	rv.mu.Lock()
	if editID == "" {
		open, what := rv.pendingLocked(), "edits are pending"
		if len(open) == 0 {
			// Auto mode: nothing waits, but the turn's applied edits may
			// still be taken back by hunk id alone, as for one pending.
			open, what = rv.autoLocked(), "auto-applied edits are open"
		}
		switch len(open) {
		case 0:
			rv.mu.Unlock()
			return event.HunkDecidedData{}, wire.Errorf(wire.CodeNotFound, "no edit is open for decisions (%s)", finalRule)
		case 1:
		default:
			rv.mu.Unlock()
			return event.HunkDecidedData{}, wire.Errorf(wire.CodeBadRequest, "%d %s; name the edit (editId, or hunkId as EDIT/HUNK)", len(open), what)
		}
		editID = open[0].id
	}
	se, ok := rv.edits[editID]
	if !ok {
		rv.mu.Unlock()
		return event.HunkDecidedData{}, wire.Errorf(wire.CodeNotFound, "no edit %q open for decisions (%s)", editID, finalRule)
	}
	if !hasHunk(se.edit, hunkID) {
		rv.mu.Unlock()
		return event.HunkDecidedData{}, wire.Errorf(wire.CodeNotFound, "edit %s has no hunk %q", editID, hunkID)
	}
	prev, decided := se.decisions[hunkID]
	switch {
	case se.unwritten != "":
		rv.mu.Unlock()
		return event.HunkDecidedData{}, wire.Errorf(wire.CodeConflict, "edit %s was never written (%s): there is nothing to take back", editID, se.unwritten)
	case se.auto && accept:
		rv.mu.Unlock()
		return event.HunkDecidedData{EditID: editID, HunkID: hunkID, Decision: command.DecisionAccept, By: prev.by}, nil
	case se.auto && !prev.accept:
		rv.mu.Unlock()
		return event.HunkDecidedData{}, wire.Errorf(wire.CodeConflict, "hunk %s/%s was already rejected", editID, hunkID)
	case !se.auto && decided:
		rv.mu.Unlock()
		return event.HunkDecidedData{}, wire.Errorf(wire.CodeConflict, "hunk %s/%s was already decided (%s by %s)", editID, hunkID, decisionWord(prev.accept), prev.by)
	}
	se.decisions[hunkID] = hunkDecision{accept: accept, note: note, by: "user"}
	complete := !se.auto && len(se.decisions) == len(se.edit.Hunks)
	rv.mu.Unlock()

	if se.auto {
		return rv.revert(se, hunkID, note, prev)
	}
	d := event.HunkDecidedData{EditID: editID, HunkID: hunkID, Decision: decision, Note: note, By: "user"}
	rv.emit(event.HunkDecided, d)
	if complete {
		close(se.decided)
	}
	return d, nil
}

// revert takes an auto-mode hunk, already written, back out of the file;
// when it cannot, the hunk's decision goes back to prev.
func (rv *review) revert(se *stagedEdit, hunkID, note string, prev hunkDecision) (event.HunkDecidedData, error) {
	var err error
	if se.undo != nil {
		err = se.undo([]string{hunkID})
	} else {
		err = rv.revertFile(se.path, se.edit, hunkID)
	}
	if err != nil {
		rv.mu.Lock()
		se.decisions[hunkID] = prev
		rv.mu.Unlock()
		return event.HunkDecidedData{}, wire.Errorf(wire.CodeConflict, "could not take hunk %s/%s back out of %s: %v", se.id, hunkID, rv.display(se.path), err)
	}
	d := event.HunkDecidedData{EditID: se.id, HunkID: hunkID, Decision: command.DecisionReject, Note: note, By: "user"}
	rv.emit(event.HunkDecided, d)
	rv.recordApplied(se, "corral", []string{hunkID}, true, "")
	return d, nil
}

// revertFile takes one hunk of ed back out of the file at path, as it is
// now.
func (rv *review) revertFile(path string, ed *hunks.Edit, hunkID string) error {
	real, current, mode, err := hunks.ReadFile(path)
	if err != nil {
		return err
	}
	next, err := ed.Revert(current, []string{hunkID})
	if err != nil {
		return err
	}
	return rv.write(real, current, next, mode)
}

func decisionWord(accept bool) string {
	if accept {
		return command.DecisionAccept
	}
	return command.DecisionReject
}

func hasHunk(e *hunks.Edit, id string) bool {
	for _, h := range e.Hunks {
		if h.ID == id {
			return true
		}
	}
	return false
}

// rejectPending rejects every undecided hunk of a review-mode edit and
// returns how many it rejected.
func (rv *review) rejectPending(se *stagedEdit, by, note string) int {
	rv.mu.Lock()
	if se.auto || len(se.decisions) == len(se.edit.Hunks) {
		rv.mu.Unlock()
		return 0
	}
	var ids []string
	for _, h := range se.edit.Hunks {
		if _, ok := se.decisions[h.ID]; !ok {
			se.decisions[h.ID] = hunkDecision{note: note, by: by}
			ids = append(ids, h.ID)
		}
	}
	close(se.decided)
	rv.mu.Unlock()
	for _, id := range ids {
		rv.emit(event.HunkDecided, event.HunkDecidedData{EditID: se.id, HunkID: id, Decision: command.DecisionReject, Note: note, By: by})
	}
	return len(ids)
}

// rejectAll rejects every undecided hunk of every edit, oldest first, as
// by (stopped, shutdown), and returns how many it rejected.
func (rv *review) rejectAll(by string) int {
	rv.mu.Lock()
	pending := rv.pendingLocked()
	rv.mu.Unlock()
	n := 0
	for _, se := range pending {
		n += rv.rejectPending(se, by, "")
	}
	return n
}

// pendingIDs lists the edits waiting for decisions, oldest first.
func (rv *review) pendingIDs() []string {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	pending := rv.pendingLocked()
	ids := make([]string, len(pending))
	for i, se := range pending {
		ids[i] = se.id
	}
	return ids
}

// pendingLocked lists review-mode edits still waiting for decisions,
// oldest first; rv.mu must be held.
func (rv *review) pendingLocked() []*stagedEdit {
	return rv.editsLocked(func(e *stagedEdit) bool { return !e.auto && len(e.decisions) < len(e.edit.Hunks) })
}

// autoLocked returns the auto-applied edits, which stay open for rejects
// until the next turn starts, in order.
func (rv *review) autoLocked() []*stagedEdit {
	return rv.editsLocked(func(e *stagedEdit) bool { return e.auto && e.unwritten == "" })
}

func (rv *review) editsLocked(keep func(*stagedEdit) bool) []*stagedEdit {
	var out []*stagedEdit
	for _, e := range rv.edits {
		if keep(e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}
