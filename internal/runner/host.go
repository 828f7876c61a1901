package runner

import (
	"context"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/wire"
)

// host is the Runner as an engine sees it.
type host Runner

var _ engine.Host = (*host)(nil)

func (h *host) r() *Runner { return (*Runner)(h) }

// Emit records an engine event. Usage also feeds the meter, context
// reports the compaction policy, tool events the presence activity, and
// a finished shell call hands over what it wrote (shellCapture).
func (h *host) Emit(typ event.Type, data any) {
	r := h.r()
	switch d := data.(type) {
	case event.ToolStartedData:
		// A shell call the engine ran without asking Permit (its own
		// allowlist) is captured from here: best effort, since the
		// command may already be running when the engine says so.
		if d.Kind == string(engine.KindShell) && gate.Mode(r.Spec().Mode) != gate.ModeReadonly {
			r.stageCaptured("", byOutside, r.shell.started(d.ToolID, false))
		}
	case event.ToolFinishedData:
		// What a shell call wrote is staged before the call is seen to
		// finish, as an edit tool's hunks are; an edit call's write is
		// the baseline from now on.
		r.stageCaptured(d.ToolID, byCommand, r.shell.finished(d.ToolID, d.Outcome == "ok"))
		r.review.engineFinished(d.ToolID, d.Outcome == "ok", failureReason(d))
		if v, ok := r.verdicts.take(d.ToolID); ok {
			d.Gate = &v
			data = d
		}
	}
	r.emit(typ, data)
	switch d := data.(type) {
	case event.UsageData:
		r.addUsage(d)
	case event.ToolStartedData:
		r.setActivity(d.Summary)
	case event.ToolFinishedData:
		r.setActivity("thinking")
	case event.ContextData:
		r.compaction.observe(d.Percent)
	}
}

// Permit puts a tool call through the gate, a person's answer when the
// gate asks, and hunk review when the call edits a file.
func (h *host) Permit(ctx context.Context, call engine.ToolCall) engine.Verdict {
	r := h.r()
	v := r.permit(ctx, call)
	if call.Kind == engine.KindShell && !v.Allow && gate.Mode(r.Spec().Mode) != gate.ModeReadonly {
		r.stageCaptured("", byOutside, r.shell.denied(call.ID))
	}
	return v
}

// failureReason is what a finished call says of its failure, in one line.
func failureReason(d event.ToolFinishedData) string {
	why := d.Message
	if why == "" {
		why, _, _ = strings.Cut(strings.TrimSpace(d.Output), "\n")
	}
	if len(why) > 200 {
		why = strings.ToValidUTF8(why[:200], "") + "…"
	}
	if why == "" && d.Outcome != "" {
		why = "the call ended " + d.Outcome
	}
	return why
}

// TakeSteers hands the waiting steers to the engine at a tool boundary.
func (h *host) TakeSteers(toolID string) []string {
	r := h.r()
	s := r.turns.takeSteers()
	for _, text := range s {
		r.emit(event.SteerDelivered, event.SteerData{Text: text, ToolID: toolID})
	}
	return s
}

// setActivity shows what the running turn does (in status and presence).
func (r *Runner) setActivity(a string) {
	r.mu.Lock()
	if r.turns.inTurn() {
		r.activity = a
	}
	r.mu.Unlock()
	r.presence.touch()
}

// addUsage counts a model call's usage and stops the turn when it takes
// spending to the spend cap.
func (r *Runner) addUsage(u event.UsageData) {
	if crossed, spent, capUSD := r.meter.add(u); crossed {
		r.emit(event.Failure, spendCapFailure(spent, capUSD))
		r.goBackground(func(ctx context.Context) { r.stop(ctx, "spendCap") })
	}
}

// policyRunner is the Runner as the turn-end policies see it.
type policyRunner struct{ r *Runner }

var _ policyHost = policyRunner{}

func (p policyRunner) spec() wire.Spec               { return p.r.Spec() }
func (p policyRunner) emit(typ event.Type, data any) { p.r.emit(typ, data) }
func (p policyRunner) engineUsage(u event.UsageData) { (*host)(p.r).Emit(event.Usage, u) }
func (p policyRunner) enqueue(text, kind string)     { p.r.enqueueOwn(text, kind, false) }

func (p policyRunner) busy() bool {
	p.r.mu.Lock()
	closed := p.r.closed
	p.r.mu.Unlock()
	return closed || p.r.turns.blocked()
}
