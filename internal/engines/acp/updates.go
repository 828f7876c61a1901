package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/event"
)

// Update kinds (the sessionUpdate discriminator).
const (
	uAgentMessage = "agent_message_chunk"
	uToolCall     = "tool_call"
	uToolUpdate   = "tool_call_update"
	uPlan         = "plan"
	uUsage        = "usage_update"
)

// onNotify receives the agent's notifications, in order, on the reading
// goroutine. Only session/update exists; updates outside a turn (a loaded
// session's history, available commands) are dropped.
func (e *Engine) onNotify(a *agent, method string, params json.RawMessage) {
	if method != nSessionUpdate {
		e.log.Debug("acp: notification ignored", zap.String("method", method))
		return
	}
	var n sessionNotification
	var u update
	if err := json.Unmarshal(params, &n); err != nil {
		e.log.Warn("acp: unreadable session/update", zap.Error(err))
		return
	}
	if err := json.Unmarshal(n.Update, &u); err != nil {
		e.log.Warn("acp: unreadable session/update", zap.Error(err))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.turn
	if t == nil || e.agent != a || n.SessionID != e.sessionID {
		return
	}
	e.applyLocked(t, a, u)
}

// applyLocked turns one update into events.
func (e *Engine) applyLocked(t *turnState, a *agent, u update) {
	switch u.SessionUpdate {
	case uAgentMessage:
		text := chunkText(u.Content)
		if text == "" {
			return
		}
		t.segment.WriteString(text)
		e.host.Emit(event.AssistantDelta, event.TextData{Text: text})
	case uToolCall, uToolUpdate:
		if u.ToolCallID == "" {
			return
		}
		tc := t.tool(u.ToolCallID)
		tc.merge(u.toolFields, u.Content)
		if tc.ready() {
			e.startToolLocked(t, tc)
		}
		if tc.status == "completed" || tc.status == "failed" {
			outcome := "ok"
			if tc.status == "failed" {
				outcome = "error"
			}
			e.finishToolLocked(t, tc, outcome, tc.output())
			e.takeSteersLocked(t, a, tc.id)
		}
	case uPlan:
		e.planLocked(t, u.Entries)
	case uUsage:
		e.usageLocked(t, a, u)
	}
}

// chunkText is the text of a content chunk (other content is not shown).
func chunkText(raw json.RawMessage) string {
	var c textContent
	if json.Unmarshal(raw, &c) != nil || c.Type != "text" {
		return ""
	}
	return c.Text
}

// flushTextLocked ends the current text segment: one assistantText event.
func (e *Engine) flushTextLocked(t *turnState) {
	if t.segment.Len() == 0 {
		return
	}
	t.lastText = t.segment.String()
	t.segment.Reset()
	e.host.Emit(event.AssistantText, event.TextData{Text: t.lastText})
}

// planLocked shows the agent's plan as a finished "plan" tool call, as the
// other engines show their agents' to-do lists.
func (e *Engine) planLocked(t *turnState, entries []planEntry) {
	t.plans++
	id := fmt.Sprintf("plan-%d", t.plans)
	var b strings.Builder
	done := 0
	for _, en := range entries {
		mark := "[ ]"
		switch en.Status {
		case "completed":
			mark = "[x]"
			done++
		case "in_progress":
			mark = "[~]"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, en.Content)
	}
	e.flushTextLocked(t)
	e.host.Emit(event.ToolStarted, event.ToolStartedData{ToolID: id, Tool: "plan", Kind: "other",
		Summary: fmt.Sprintf("plan: %d of %d done", done, len(entries))})
	e.host.Emit(event.ToolFinished, event.ToolFinishedData{ToolID: id, Tool: "plan", Outcome: "ok", Output: b.String()})
}

// usageLocked turns a usage update into a context event and, when the
// agent reports its cumulative cost in US dollars, a usage event with what
// was spent since the last one.
func (e *Engine) usageLocked(t *turnState, a *agent, u update) {
	if u.Used != nil && u.Size != nil && *u.Size > 0 {
		e.host.Emit(event.Context, event.ContextData{UsedTokens: *u.Used, WindowTokens: *u.Size,
			Percent: float64(*u.Used) * 100 / float64(*u.Size)})
	}
	if u.Cost == nil || !strings.EqualFold(u.Cost.Currency, "USD") {
		return
	}
	delta := u.Cost.Amount - a.costSeen
	if delta <= 0 {
		return
	}
	a.costSeen = u.Cost.Amount
	e.host.Emit(event.Usage, event.UsageData{CostUSD: delta, Model: e.opts.Model})
	t.usage.CostUSD += delta
	t.usage.Estimated = false
	t.hasUsage = true
}
