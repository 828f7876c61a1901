package claude

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// signInMessage is the failure message for a rejected key.
const signInMessage = "the Anthropic API rejected the " + CredentialItem + " credential (HTTP 401): store a valid key in the OS keyring or the credentials file"

// finishTurn turns a turn's result into the TurnResult and error the runner
// gets. It accounts the turn's exact cost.
func (e *Engine) finishTurn(t *turnState) (engine.TurnResult, error) {
	t.mu.Lock()
	r, rerr := t.result, t.resultErr
	stopped, authFailed, apiError, lastText := t.stopRequested, t.authFailed, t.apiError, t.lastText
	newConv := t.newConv
	t.mu.Unlock()
	if rerr != nil || r == nil {
		return engine.TurnResult{}, &engine.Failure{
			Code:    event.FailEngineError,
			Message: "the claude CLI ended the turn with a result the adapter cannot read",
			Stderr:  t.conn.stderr.Lines(),
			Err:     rerr,
		}
	}

	e.mu.Lock()
	cost := e.cost.turnCost(*r)
	for model, u := range r.ModelUsage {
		if u.ContextWindow > 0 {
			e.windows[model] = u.ContextWindow
		}
	}
	model := e.model
	e.mu.Unlock()

	usage := resultUsage(*r, model)
	usage.CostUSD = cost
	res := engine.TurnResult{Usage: usage, HasUsage: true, Text: lastText, Conversation: newConv}
	failed := r.IsError || r.Subtype != "success"
	switch {
	case authFailed || isAuthError(r.APIErrorStatus, ""):
		return res, &engine.Failure{Code: event.FailSignInExpired, Message: signInMessage, Stderr: t.conn.stderr.Lines()}
	case stopped && failed:
		res.Stopped = true
		return res, nil
	case failed:
		return res, resultFailure(*r, apiError, t.conn.stderr.Lines())
	}
	if r.Result != "" {
		res.Text = r.Result
	}
	return res, nil
}

// resultFailure describes a turn the CLI ended in error.
func resultFailure(r resultFrame, apiError string, stderr []string) *engine.Failure {
	detail := firstNonEmpty(r.Result, apiError, strings.Join(r.Errors, "; "))
	if detail == "" {
		detail = r.Subtype
	}
	code := event.FailEngineError
	if contextExhausted(r, detail) {
		code = event.FailContextFull
	}
	msg := "the claude CLI ended the turn in error: " + clip(detail, 500)
	if r.APIErrorStatus != nil {
		msg += fmt.Sprintf(" (API status %d %s)", *r.APIErrorStatus, r.APIErrorType)
	}
	if r.TerminalReason != "" {
		msg += " [" + r.TerminalReason + "]"
	}
	return &engine.Failure{Code: code, Message: msg, Stderr: stderr}
}

// contextExhausted recognises a conversation too long for the model's
// window, which the API reports as an invalid request.
func contextExhausted(r resultFrame, detail string) bool {
	d := strings.ToLower(detail)
	return strings.Contains(d, "prompt is too long") ||
		strings.Contains(d, "context window") ||
		strings.Contains(strings.ToLower(r.TerminalReason), "prompt_too_long")
}
