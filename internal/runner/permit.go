package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// permit decides a tool call: the gate's verdict, a person's answer when
// the gate asks (the ask broker), and hunk review when the call edits a
// file (review). The session's state says what it waits for meanwhile.
func (r *Runner) permit(ctx context.Context, call engine.ToolCall) engine.Verdict {
	j := r.gate.judge(call)
	r.verdicts.put(call.ID, event.GateVerdict{Decision: string(j.Decision), Category: string(j.Category)})
	switch j.Action() {
	case gate.ActionRefuse:
		return engine.Verdict{Message: "Corral's gate denied this " + string(j.Category) + " call: " + j.Reason}
	case gate.ActionUnavailable:
		r.unavailable(call, j.Reason)
		return engine.Verdict{Message: "No human is available to approve this (the session is unattended): " + j.Reason}
	case gate.ActionAsk:
		r.showOutside(call.ID)
		dec, note := r.openAsk(ctx, call, j)
		if dec != command.DecisionAllow {
			msg := "The user denied this " + string(j.Category) + " call."
			if note != "" {
				msg += " Their note: " + note
			}
			return engine.Verdict{Message: msg}
		}
	}
	switch {
	case call.Kind == engine.KindEdit && call.Edit != nil:
		v := r.reviewEdit(ctx, call)
		if v.Allow {
			// The engine writes the edit as accepted once it has the
			// verdict: the capture takes it as reviewed.
			r.shell.expect(call.ID, call.Edit.Path, hunks.Snapshot{Exists: !call.Edit.Delete, Data: call.Edit.After})
		}
		return v
	case call.Kind == engine.KindShell && gate.Mode(r.Spec().Mode) != gate.ModeReadonly:
		r.stageCaptured("", byOutside, r.shell.started(call.ID, true))
	}
	return engine.Verdict{Allow: true}
}

// showOutside stages what changed in the worktree outside any tool call
// since the capture last looked, before the session waits for a person:
// they see, and can revert, everything changed so far.
func (r *Runner) showOutside(toolID string) {
	if gate.Mode(r.Spec().Mode) != gate.ModeReadonly {
		r.stageCaptured("", byOutside, r.shell.outside(toolID))
	}
}

func (r *Runner) unavailable(call engine.ToolCall, reason string) {
	r.emit(event.Failure, event.FailureData{
		Code:    event.FailPermissionUnavailable,
		Message: fmt.Sprintf("%s needs approval but the session is unattended: %s", call.Tool, reason),
		Action:  actionFor(event.FailPermissionUnavailable),
	})
}

// openAsk records an askOpened event and waits for its answer. Every ask
// ends with exactly one askAnswered event (see askBroker).
func (r *Runner) openAsk(ctx context.Context, call engine.ToolCall, j gate.Judgement) (decision, note string) {
	id, seq := r.ids.next("a")
	r.mu.Lock()
	a := r.asks.add(id, seq)
	r.state, r.activity = wire.StateWaitingForApproval, "waiting for approval: "+call.Tool
	r.mu.Unlock()
	r.emit(event.AskOpened, event.AskOpenedData{
		AskID: id, ToolID: call.ID, Tool: call.Tool, Category: string(j.Category), Reason: j.Reason,
		Command: call.Command, Path: editPath(call), URL: call.URL, Parts: partsJSON(j.Parts),
	})
	r.presence.touch()

	ans := r.asks.wait(ctx, a)
	r.mu.Lock()
	if r.asks.forget(a) == 0 && r.turns.inTurn() {
		r.state, r.activity = wire.StateWorking, "running "+call.Tool
	}
	r.mu.Unlock()
	r.presence.touch()
	return ans.decision, ans.note
}

func editPath(call engine.ToolCall) string {
	if call.Edit != nil {
		return call.Edit.Path
	}
	return call.Path
}

func partsJSON(parts []gate.Part) json.RawMessage {
	if len(parts) == 0 {
		return nil
	}
	raw, err := json.Marshal(parts)
	if err != nil {
		return nil
	}
	return raw
}

// reviewEdit stages an edit as hunks and waits for the reviewer (review
// mode), or records it as accepted (auto mode).
func (r *Runner) reviewEdit(ctx context.Context, call engine.ToolCall) engine.Verdict {
	p := call.Edit
	before := hunks.Snapshot{Exists: p.Existed, Data: p.Before}
	after := hunks.Snapshot{Exists: !p.Delete, Data: p.After}
	spec := r.Spec()
	auto := spec.Mode == "auto"
	display := r.review.display(p.Path)
	ed, err := hunks.Diff(display, before, after)
	if err != nil {
		return engine.Verdict{Message: fmt.Sprintf("Corral could not stage this edit for review: %v", err)}
	}
	if len(ed.Hunks) == 0 {
		return engine.Verdict{Allow: true}
	}
	if !auto && spec.Unattended {
		r.unavailable(call, "edits need review in review mode; run unattended sessions in auto mode")
		return engine.Verdict{Message: "No human is available to review this edit (the session is unattended and in review mode)."}
	}

	if !auto {
		r.showOutside(call.ID)
	}
	id, seq := r.ids.next("e")
	r.mu.Lock()
	se := r.review.stage(id, seq, call.ID, p.Path, ed, auto, nil)
	if !auto {
		r.state, r.activity = wire.StateWaitingForReview, "waiting for review: "+display
	}
	r.mu.Unlock()
	r.emit(event.HunkStaged, event.HunkStagedData{EditID: id, ToolID: call.ID, Path: display, Auto: auto, Edit: ed})
	r.presence.touch()

	r.review.wait(ctx, se)
	r.mu.Lock()
	if r.turns.inTurn() && r.state == wire.StateWaitingForReview && len(r.review.pendingIDs()) == 0 {
		r.state, r.activity = wire.StateWorking, "running "+call.Tool
	}
	r.mu.Unlock()
	r.presence.touch()
	return r.review.verdict(se)
}

// gateVerdicts holds the gate's rule decision on each call it judged until
// the engine reports the call finished, whose toolFinished carries it (the
// metrics count decisions by rule from there). A turn's end forgets calls
// the engine never finished.
type gateVerdicts struct {
	mu sync.Mutex
	m  map[string]event.GateVerdict
}

func (g *gateVerdicts) put(toolID string, v event.GateVerdict) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]event.GateVerdict{}
	}
	g.m[toolID] = v
}

func (g *gateVerdicts) take(toolID string) (event.GateVerdict, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.m[toolID]
	delete(g.m, toolID)
	return v, ok
}

func (g *gateVerdicts) clear() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.m)
}
