package codex

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/event"
)

func (e *Engine) badLine(line []byte, err error) {
	e.log.Warn("codex app-server sent an unreadable line", zap.Error(err), zap.String("line", clip(line, 200)))
}

// notify receives every notification, in order, on the server's reading
// goroutine.
func (e *Engine) notify(method string, params json.RawMessage) {
	if err := e.onNotification(notification{Method: method, Params: params}); err != nil {
		e.log.Warn("codex notification not understood", zap.String("method", method), zap.Error(err))
	}
}

// notification is one notification from the server.
type notification struct {
	Method string
	Params json.RawMessage
}

func (e *Engine) onNotification(m notification) error {
	switch m.Method {
	case nConfigWarning:
		var w configWarning
		if err := json.Unmarshal(m.Params, &w); err != nil {
			return err
		}
		if isBenignWarning(w) {
			e.log.Info("codex config warning", zap.String("summary", w.Summary))
			return nil
		}
		e.log.Error("codex rejected the configuration", zap.String("summary", w.Summary))
		e.mu.Lock()
		if e.rejected == nil {
			e.rejected = warningFailure(w)
		}
		e.mu.Unlock()
	case nTurnStarted, nTurnCompleted:
		var n turnNotification
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return err
		}
		ts := e.turnFor(n.ThreadID)
		if ts == nil || !ts.owns(n.Turn.ID) {
			return nil
		}
		ts.adopt(n.Turn.ID)
		if m.Method == nTurnCompleted {
			ts.finish(n.Turn, leftOpenReason(n.Turn.Status))
		}
	case nItemStarted, nItemCompleted:
		var n itemNotification
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return err
		}
		ts := e.turnFor(n.ThreadID)
		if ts == nil || !ts.owns(n.TurnID) {
			return nil
		}
		ts.adopt(n.TurnID)
		if m.Method == nItemStarted {
			ts.itemStarted(n.Item)
		} else {
			ts.itemCompleted(n.Item)
		}
	case nAgentMessageDelta:
		var n deltaNotification
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return err
		}
		if ts := e.turnFor(n.ThreadID); ts != nil && ts.owns(n.TurnID) && n.Delta != "" {
			ts.send(event.AssistantDelta, event.TextData{Text: n.Delta})
		}
	case nFileChangePatch:
		var n patchUpdatedNotification
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return err
		}
		if ts := e.turnFor(n.ThreadID); ts != nil {
			ts.mu.Lock()
			ts.changes[n.ItemID] = n.Changes
			ts.mu.Unlock()
		}
	case nTokenUsage:
		var n tokenUsageNotification
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return err
		}
		e.onTokenUsage(n)
	case nError:
		var n errorNotification
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return err
		}
		ts := e.turnFor(n.ThreadID)
		if ts == nil || !n.WillRetry {
			return nil
		}
		ts.mu.Lock()
		ts.retries++
		attempt := ts.retries
		ts.mu.Unlock()
		ts.send(event.Retry, retryData(n, attempt))
	case nServerRequestSettled:
		var n serverRequestResolved
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return err
		}
		id, err := jsonrpc.CanonicalID(n.RequestID)
		if err != nil || id == nil {
			return fmt.Errorf("resolved request id %s", n.RequestID)
		}
		if ts := e.turnFor(n.ThreadID); ts != nil {
			ts.resolved(string(id))
		}
	}
	return nil
}

// leftOpenReason explains why a tool was still open when its turn ended.
func leftOpenReason(status string) string {
	switch status {
	case "interrupted":
		return "the turn was stopped while the tool ran"
	case "failed":
		return "the turn failed while the tool ran"
	default:
		return "the turn ended while the tool still ran in the background"
	}
}

// retryData describes a model call Codex is about to retry. Codex says
// "Reconnecting... 1/2" and puts the cause in additionalDetails.
func retryData(n errorNotification, attempt int) event.RetryData {
	d := event.RetryData{Attempt: attempt, Error: n.Error.Message}
	if n.Error.AdditionalDetails != nil && *n.Error.AdditionalDetails != "" {
		d.Error = *n.Error.AdditionalDetails
	}
	var at, of int
	if _, err := fmt.Sscanf(n.Error.Message[strings.LastIndexByte(n.Error.Message, ' ')+1:], "%d/%d", &at, &of); err == nil && of > 0 {
		d.Attempt, d.MaxRetries = at, of
	}
	return d
}

func (e *Engine) onTokenUsage(n tokenUsageNotification) {
	cur := n.TokenUsage.Total
	e.mu.Lock()
	prev, seen := e.totals[n.ThreadID]
	e.totals[n.ThreadID] = cur
	ts := e.turns[n.ThreadID]
	model, p, priced := e.model, e.price, e.priced
	e.mu.Unlock()
	if ts == nil || ts.ended() || n.TurnID == "" || ts.turnID() != n.TurnID {
		// Figures restored after a resume (they name the turn that
		// produced them), or late ones: a baseline only. A turn's own
		// calls come after turn/started, so its id is known by then.
		return
	}
	// Codex repeats a thread's figures without a new model call (around
	// a compaction, after a resume); only a change of the running total
	// means the "last" figures are a new call's.
	if !seen || cur != prev {
		u := callUsage(n.TokenUsage.Last)
		u.Model = model
		if priced {
			u.CostUSD = p.Cost(u)
		}
		if u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens > 0 {
			ts.addUsage(u)
			ts.send(event.Usage, u)
		}
	}
	window := int64(0)
	if n.TokenUsage.ModelContextWindow != nil {
		window = *n.TokenUsage.ModelContextWindow
	}
	if c, ok := contextData(n.TokenUsage.Last, window); ok {
		ts.send(event.Context, c)
	}
}
