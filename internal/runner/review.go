package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// stagedEdit is an edit waiting for (or, in auto mode, open to) hunk
// decisions until its turn ends.
type stagedEdit struct {
	id        string
	seq       int
	toolID    string
	path      string // absolute
	edit      *hunks.Edit
	auto      bool
	decisions map[string]hunkDecision
	decided   chan struct{} // closed when every hunk has a decision
}

type hunkDecision struct {
	accept bool
	note   string
	by     string
}

// review stages an edit as hunks and waits for the reviewer (review mode),
// or records it as accepted (auto mode).
func (r *Runner) review(ctx context.Context, call engine.ToolCall) engine.Verdict {
	p := call.Edit
	before := hunks.Snapshot{Exists: p.Existed, Data: p.Before}
	after := hunks.Snapshot{Exists: !p.Delete, Data: p.After}
	r.mu.Lock()
	display := r.displayPath(p.Path)
	auto := r.spec.Mode == "auto"
	unattended := r.spec.Unattended
	r.mu.Unlock()
	ed, err := hunks.Diff(display, before, after)
	if err != nil {
		return engine.Verdict{Message: fmt.Sprintf("Corral could not stage this edit for review: %v", err)}
	}
	if len(ed.Hunks) == 0 {
		return engine.Verdict{Allow: true}
	}
	if !auto && unattended {
		r.unavailable(call, "edits need review in review mode; run unattended sessions in auto mode")
		return engine.Verdict{Message: "No human is available to review this edit (the session is unattended and in review mode)."}
	}

	r.mu.Lock()
	se := &stagedEdit{id: r.newID("e"), toolID: call.ID, path: p.Path, edit: ed, auto: auto,
		decisions: map[string]hunkDecision{}, decided: make(chan struct{})}
	se.seq = r.nextID
	if auto {
		for _, h := range ed.Hunks {
			se.decisions[h.ID] = hunkDecision{accept: true, by: "auto"}
		}
		close(se.decided)
	} else {
		r.state, r.activity = wire.StateWaitingForReview, "waiting for review: "+display
	}
	r.edits[se.id] = se
	r.mu.Unlock()
	r.emit(wire.EvHunkStaged, wire.HunkStagedData{EditID: se.id, ToolID: call.ID, Path: display, Auto: auto, Edit: ed})
	r.presence.touch()

	select {
	case <-se.decided:
	case <-ctx.Done():
		r.rejectAllPending(se, "cancelled", "")
		<-se.decided
	}
	r.mu.Lock()
	if r.running != nil && r.state == wire.StateWaitingForReview && len(r.pendingEditsLocked()) == 0 {
		r.state, r.activity = wire.StateWorking, "running "+call.Tool
	}
	var accepted, rejected []string
	var notes []string
	for _, h := range ed.Hunks {
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
	r.mu.Unlock()
	r.presence.touch()

	switch {
	case len(rejected) == 0:
		r.recordApplied(se, "engine", accepted, false, "")
		return engine.Verdict{Allow: true}
	case len(accepted) == 0:
		return engine.Verdict{Message: "The reviewer rejected every hunk of this edit to " + display + "; nothing was written." + notesText(notes)}
	default:
		return r.applyPartial(se, display, accepted, rejected, notes)
	}
}

func notesText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return " Reviewer's notes: " + strings.Join(notes, "; ") + "."
}

// applyPartial writes the accepted hunks onto the file as it is now, by
// context, and refuses the engine's own write.
func (r *Runner) applyPartial(se *stagedEdit, display string, accepted, rejected, notes []string) engine.Verdict {
	real, current, mode, err := hunks.ReadFile(se.path)
	if err == nil {
		var next hunks.Snapshot
		next, err = se.edit.Apply(current, accepted)
		if err == nil {
			err = hunks.WriteFile(real, current, next, mode)
		}
	}
	if err != nil {
		conflict := err.Error()
		r.emit(wire.EvEditApplied, wire.EditAppliedData{EditID: se.id, Path: display, By: "corral", Hunks: []string{}, Conflict: conflict})
		return engine.Verdict{Message: fmt.Sprintf("The reviewer accepted hunks %s of this edit to %s, but they no longer apply to the file as it is now (%s); nothing was written. Rejected: %s.%s",
			strings.Join(accepted, ", "), display, conflict, strings.Join(rejected, ", "), notesText(notes))}
	}
	r.recordApplied(se, "corral", accepted, false, "")
	return engine.Verdict{Applied: true, Message: fmt.Sprintf(
		"The reviewer accepted only part of this edit to %s. Corral applied hunks %s itself; hunks %s were rejected and not written. Do not retry the same edit; read the file to see its current content.%s",
		display, strings.Join(accepted, ", "), strings.Join(rejected, ", "), notesText(notes))}
}

// recordApplied emits editApplied and adds the lines to the turn's summary.
func (r *Runner) recordApplied(se *stagedEdit, by string, ids []string, reverted bool, conflict string) {
	added, removed := 0, 0
	for _, h := range se.edit.Hunks {
		for _, id := range ids {
			if h.ID == id {
				added += h.Added
				removed += h.Removed
			}
		}
	}
	r.mu.Lock()
	if t := r.running; t != nil {
		t.files[se.path] = true
		if reverted {
			t.added -= added
			t.removed -= removed
		} else {
			t.added += added
			t.removed += removed
		}
	}
	display := r.displayPath(se.path)
	r.mu.Unlock()
	if ids == nil {
		ids = []string{}
	}
	r.emit(wire.EvEditApplied, wire.EditAppliedData{EditID: se.id, Path: display, By: by, Hunks: ids, Reverted: reverted, Added: added, Removed: removed, Conflict: conflict})
}

func (r *Runner) decideHunk(cmd wire.Command) (any, error) {
	var accept bool
	switch cmd.Decision {
	case wire.DecisionAccept:
		accept = true
	case wire.DecisionReject:
	default:
		return nil, wire.Errorf(wire.CodeBadRequest, "decideHunk needs decision accept or reject, not %q", cmd.Decision)
	}
	editID, hunkID := cmd.EditID, cmd.HunkID
	if e, h, ok := strings.Cut(hunkID, "/"); ok && editID == "" {
		editID, hunkID = e, h
	}
	r.mu.Lock()
	if editID == "" {
		pending := r.pendingEditsLocked()
		if len(pending) != 1 {
			r.mu.Unlock()
			return nil, wire.Errorf(wire.CodeBadRequest, "%d edits are pending; name the edit (editId, or hunkId as EDIT/HUNK)", len(pending))
		}
		editID = pending[0].id
	}
	se, ok := r.edits[editID]
	if !ok {
		r.mu.Unlock()
		return nil, wire.Errorf(wire.CodeNotFound, "no edit %q open for decisions (decisions are final once its turn ends)", editID)
	}
	if !hasHunk(se.edit, hunkID) {
		r.mu.Unlock()
		return nil, wire.Errorf(wire.CodeNotFound, "edit %s has no hunk %q", editID, hunkID)
	}
	prev, decided := se.decisions[hunkID]
	switch {
	case se.auto && accept:
		r.mu.Unlock()
		return wire.HunkDecidedData{EditID: editID, HunkID: hunkID, Decision: wire.DecisionAccept, By: prev.by}, nil
	case se.auto && !prev.accept:
		r.mu.Unlock()
		return nil, wire.Errorf(wire.CodeConflict, "hunk %s/%s was already rejected", editID, hunkID)
	case !se.auto && decided:
		r.mu.Unlock()
		return nil, wire.Errorf(wire.CodeConflict, "hunk %s/%s was already decided (%s by %s)", editID, hunkID, decisionWord(prev.accept), prev.by)
	}
	se.decisions[hunkID] = hunkDecision{accept: accept, note: cmd.Note, by: "user"}
	complete := !se.auto && len(se.decisions) == len(se.edit.Hunks)
	r.mu.Unlock()

	if se.auto {
		// Auto mode wrote the hunk already: take it back out of the file.
		real, current, mode, err := hunks.ReadFile(se.path)
		if err == nil {
			var next hunks.Snapshot
			if next, err = se.edit.Revert(current, []string{hunkID}); err == nil {
				err = hunks.WriteFile(real, current, next, mode)
			}
		}
		if err != nil {
			r.mu.Lock()
			se.decisions[hunkID] = prev
			r.mu.Unlock()
			return nil, wire.Errorf(wire.CodeConflict, "could not take hunk %s/%s back out of %s: %v", editID, hunkID, r.displayPath(se.path), err)
		}
		r.emit(wire.EvHunkDecided, wire.HunkDecidedData{EditID: editID, HunkID: hunkID, Decision: wire.DecisionReject, Note: cmd.Note, By: "user"})
		r.recordApplied(se, "corral", []string{hunkID}, true, "")
		return wire.HunkDecidedData{EditID: editID, HunkID: hunkID, Decision: wire.DecisionReject, Note: cmd.Note, By: "user"}, nil
	}
	d := wire.HunkDecidedData{EditID: editID, HunkID: hunkID, Decision: cmd.Decision, Note: cmd.Note, By: "user"}
	r.emit(wire.EvHunkDecided, d)
	if complete {
		close(se.decided)
	}
	return d, nil
}

func decisionWord(accept bool) string {
	if accept {
		return wire.DecisionAccept
	}
	return wire.DecisionReject
}

func hasHunk(e *hunks.Edit, id string) bool {
	for _, h := range e.Hunks {
		if h.ID == id {
			return true
		}
	}
	return false
}

// rejectAllPending rejects every undecided hunk of a review-mode edit and
// returns how many it rejected.
func (r *Runner) rejectAllPending(se *stagedEdit, by, note string) int {
	r.mu.Lock()
	if se.auto || len(se.decisions) == len(se.edit.Hunks) {
		r.mu.Unlock()
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
	r.mu.Unlock()
	for _, id := range ids {
		r.emit(wire.EvHunkDecided, wire.HunkDecidedData{EditID: se.id, HunkID: id, Decision: wire.DecisionReject, Note: note, By: by})
	}
	return len(ids)
}

// pendingEditsLocked lists review-mode edits still waiting for decisions,
// oldest first; r.mu must be held.
func (r *Runner) pendingEditsLocked() []*stagedEdit {
	var out []*stagedEdit
	for _, e := range r.edits {
		if !e.auto && len(e.decisions) < len(e.edit.Hunks) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// finalizeEdits closes the turn's edits to further decisions.
func (r *Runner) finalizeEdits() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.edits {
		delete(r.edits, id)
	}
}

// displayPath shows a path relative to the worktree when it is inside it.
func (r *Runner) displayPath(p string) string {
	if rel, err := filepath.Rel(r.spec.Cwd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}
