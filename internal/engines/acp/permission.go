package acp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
)

// onRequest answers the agent's requests, each on a goroutine of its own:
// a Permit can take as long as a human does.
func (e *Engine) onRequest(ctx context.Context, a *agent, method string, params json.RawMessage) (any, error) {
	switch method {
	case rPermission:
		return e.onPermission(ctx, a, params)
	case rReadTextFile:
		return e.onReadTextFile(ctx, a, params)
	case rWriteTextFile:
		return e.onWriteTextFile(ctx, a, params)
	case rTerminalCreate:
		return e.onTerminalCreate(ctx, a, params)
	case rTerminalOutput, rTerminalWait, rTerminalKill, rTerminalFree:
		return e.onTerminal(ctx, a, method, params)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Corral does not handle " + method}
}

// invalid refuses a request Corral cannot read.
func invalid(method string, err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Corral could not read %s: %v", method, err)}
}

// refused is the error a request the gate or a reviewer refused gets: the
// agent shows it to the model as the tool's failure.
func refused(v engine.Verdict, what string) error {
	msg := v.Message
	if msg == "" {
		msg = "Corral refused to " + what + "."
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// permitContext is a Permit's context: it ends with the request (the
// agent went away) and with the turn (interrupted, or over).
func permitContext(req context.Context, t *turnState) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(req)
	stop := context.AfterFunc(t.permits, cancel)
	return ctx, func() { stop(); cancel() }
}

// activeTurnLocked returns the running turn if the request is the current
// agent's and session's.
func (e *Engine) activeTurnLocked(a *agent, sessionID string) *turnState {
	if e.agent != a || sessionID != e.sessionID || e.turn == nil || e.turn.interrupted {
		return nil
	}
	return e.turn
}

// onPermission puts a tool call through Permit (the gate, a person's
// answer) and answers with the matching option. A call Corral allows this
// way is not asked about again when its command runs in a terminal or its
// file is read; an edit is still reviewed as hunks when it is written. The
// preset's deferred tools are allowed here and judged where they act.
func (e *Engine) onPermission(ctx context.Context, a *agent, params json.RawMessage) (any, error) {
	var p permissionParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalid(rPermission, err)
	}
	cancelled := permissionResult{Outcome: permissionOutcome{Outcome: "cancelled"}}
	e.mu.Lock()
	t := e.activeTurnLocked(a, p.SessionID)
	if t == nil || p.ToolCall.ToolCallID == "" {
		e.mu.Unlock()
		return cancelled, nil
	}
	tc := t.tool(p.ToolCall.ToolCallID)
	tc.merge(p.ToolCall, nil)
	e.startToolLocked(t, tc)
	if e.set.deferred[tc.name] {
		// Judged where it acts: in fs/write_text_file or terminal/create.
		e.mu.Unlock()
		if id := pickOption(p.Options, "allow_once"); id != "" {
			return permissionResult{Outcome: permissionOutcome{Outcome: "selected", OptionID: id}}, nil
		}
		e.mu.Lock()
	}
	call := tc.call(e.opts.Cwd)
	pctx, done := permitContext(ctx, t)
	e.mu.Unlock()
	defer done()

	v := e.host.Permit(pctx, call)
	if pctx.Err() != nil {
		return cancelled, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !v.Allow {
		tc.denied, tc.message = true, v.Message
		t.refused = call.Tool + " (" + v.Message + ")"
		if id := pickOption(p.Options, "reject_once", "reject_always"); id != "" {
			return permissionResult{Outcome: permissionOutcome{Outcome: "selected", OptionID: id}}, nil
		}
		return cancelled, nil
	}
	switch call.Kind {
	case engine.KindShell:
		t.approved["exec\x00"+call.Command]++
	case engine.KindRead:
		t.approved["read\x00"+call.Path]++
	}
	id := pickOption(p.Options, "allow_once")
	if id == "" {
		// Without a one-time option, "always" it is: the agent will not
		// ask again, but what it then does through Corral's terminals and
		// files is still judged there.
		id = pickOption(p.Options, "allow_always")
		e.log.Info("acp: the agent offered no allow-once option", zap.String("tool", call.Tool))
	}
	if id == "" {
		return cancelled, nil
	}
	return permissionResult{Outcome: permissionOutcome{Outcome: "selected", OptionID: id}}, nil
}

// pickOption returns the id of the first option of the first kind listed.
func pickOption(options []permissionOption, kinds ...string) string {
	for _, k := range kinds {
		for _, o := range options {
			if o.Kind == k {
				return o.OptionID
			}
		}
	}
	return ""
}

// consumeApprovalLocked reports whether a permission request already
// allowed key, using that approval up.
func (t *turnState) consumeApprovalLocked(key string) bool {
	if t.approved[key] == 0 {
		return false
	}
	t.approved[key]--
	return true
}
