package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/wire"
)

// host is the Runner as an engine sees it.
type host Runner

var _ engine.Host = (*host)(nil)

func (h *host) r() *Runner { return (*Runner)(h) }

// Emit records an engine event. Usage also feeds the spend cap, and tool
// events the presence activity.
func (h *host) Emit(typ wire.EventType, data any) {
	r := h.r()
	r.emit(typ, data)
	switch d := data.(type) {
	case wire.UsageData:
		r.addUsage(d)
	case wire.ToolStartedData:
		r.setActivity(d.Summary)
	case wire.ToolFinishedData:
		r.setActivity("thinking")
	case wire.ContextData:
		r.mu.Lock()
		r.contextPercent = d.Percent
		r.mu.Unlock()
	}
}

func (r *Runner) setActivity(a string) {
	r.mu.Lock()
	if r.running != nil {
		r.activity = a
	}
	r.mu.Unlock()
	r.presence.touch()
}

// addUsage accumulates a model call's usage and stops the turn when it
// crosses the spend cap.
func (r *Runner) addUsage(u wire.UsageData) {
	r.mu.Lock()
	r.usage.Add(u)
	if r.running != nil {
		r.running.usage.Add(u)
	}
	crossed := !r.spendCapHit && r.overCapLocked()
	if crossed {
		r.spendCapHit = true
	}
	spent, capUSD := r.usage.CostUSD, r.spec.SpendCapUSD
	r.mu.Unlock()
	if crossed {
		r.emit(wire.EvFailure, spendCapFailure(spent, capUSD))
		r.goBackground(func(ctx context.Context) { r.stop(ctx, "spendCap") })
	}
}

func spendCapFailure(spent, capUSD float64) wire.FailureData {
	return wire.FailureData{
		Code:    wire.FailSpendCap,
		Message: fmt.Sprintf("spend cap reached: $%.4f spent of a $%.2f cap", spent, capUSD),
		Action:  actionFor(wire.FailSpendCap),
	}
}

// Permit puts a tool call through the gate, a human's answer when the gate
// asks, and hunk review when the call edits a file.
func (h *host) Permit(ctx context.Context, call engine.ToolCall) engine.Verdict {
	r := h.r()
	j := r.gate.judge(call)
	switch j.Action() {
	case gate.ActionRefuse:
		return engine.Verdict{Message: "Corral's gate denied this " + string(j.Category) + " call: " + j.Reason}
	case gate.ActionUnavailable:
		r.unavailable(call, j.Reason)
		return engine.Verdict{Message: "No human is available to approve this (the session is unattended): " + j.Reason}
	case gate.ActionAsk:
		dec, note := r.openAsk(ctx, call, j)
		if dec != wire.DecisionAllow {
			msg := "The user denied this " + string(j.Category) + " call."
			if note != "" {
				msg += " Their note: " + note
			}
			return engine.Verdict{Message: msg}
		}
	}
	if call.Kind == engine.KindEdit && call.Edit != nil {
		return r.review(ctx, call)
	}
	return engine.Verdict{Allow: true}
}

func (r *Runner) unavailable(call engine.ToolCall, reason string) {
	r.emit(wire.EvFailure, wire.FailureData{
		Code:    wire.FailPermissionUnavailable,
		Message: fmt.Sprintf("%s needs approval but the session is unattended: %s", call.Tool, reason),
		Action:  actionFor(wire.FailPermissionUnavailable),
	})
}

// TakeSteers hands the waiting steers to the engine at a tool boundary.
func (h *host) TakeSteers(toolID string) []string {
	r := h.r()
	r.mu.Lock()
	s := r.steers
	r.steers = nil
	r.mu.Unlock()
	for _, text := range s {
		r.emit(wire.EvSteerDelivered, wire.SteerData{Text: text, ToolID: toolID})
	}
	return s
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
