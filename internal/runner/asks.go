package runner

import (
	"context"
	"sort"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/wire"
)

// ask is a tool call waiting for a human's allow or deny.
type ask struct {
	id     string
	seq    int
	answer chan askAnswer // buffered: the first answer wins
	done   bool
}

type askAnswer struct{ decision, note string }

// openAsk records an askOpened event and waits for its answer. Every ask
// ends with exactly one askAnswered event: by a user, a stop, a shutdown, or
// the engine withdrawing the call (cancelled).
func (r *Runner) openAsk(ctx context.Context, call engine.ToolCall, j gate.Judgement) (decision, note string) {
	r.mu.Lock()
	a := &ask{id: r.newID("a"), answer: make(chan askAnswer, 1)}
	a.seq = r.nextID
	r.asks[a.id] = a
	r.state, r.activity = wire.StateWaitingForApproval, "waiting for approval: "+call.Tool
	r.mu.Unlock()
	r.emit(wire.EvAskOpened, wire.AskOpenedData{
		AskID: a.id, ToolID: call.ID, Tool: call.Tool, Category: string(j.Category), Reason: j.Reason,
		Command: call.Command, Path: editPath(call), URL: call.URL, Parts: partsJSON(j.Parts),
	})
	r.presence.touch()

	var ans askAnswer
	select {
	case ans = <-a.answer:
	case <-ctx.Done():
		// Loses to an answer that arrived first; either way one is queued.
		_ = r.resolveAsk(a, wire.DecisionDeny, "", "cancelled")
		ans = <-a.answer
	}
	r.mu.Lock()
	delete(r.asks, a.id)
	if r.running != nil && len(r.asks) == 0 {
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

// resolveAsk answers an ask once; a second answer is a conflict.
func (r *Runner) resolveAsk(a *ask, decision, note, by string) error {
	r.mu.Lock()
	if a.done {
		r.mu.Unlock()
		return wire.Errorf(wire.CodeConflict, "ask %s was already answered", a.id)
	}
	a.done = true
	r.mu.Unlock()
	r.emit(wire.EvAskAnswered, wire.AskAnsweredData{AskID: a.id, Decision: decision, Note: note, By: by})
	a.answer <- askAnswer{decision, note}
	return nil
}

func (r *Runner) answer(cmd wire.Command) (any, error) {
	if cmd.Decision != wire.DecisionAllow && cmd.Decision != wire.DecisionDeny {
		return nil, wire.Errorf(wire.CodeBadRequest, "answer needs decision allow or deny, not %q", cmd.Decision)
	}
	r.mu.Lock()
	a, ok := r.asks[cmd.AskID]
	r.mu.Unlock()
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "no open ask %q", cmd.AskID)
	}
	if err := r.resolveAsk(a, cmd.Decision, cmd.Note, "user"); err != nil {
		return nil, err
	}
	return map[string]string{"askId": a.id, "decision": cmd.Decision}, nil
}

// openAsksLocked lists the unanswered asks, oldest first; r.mu must be held.
func (r *Runner) openAsksLocked() []*ask {
	out := make([]*ask, 0, len(r.asks))
	for _, a := range r.asks {
		if !a.done {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}
