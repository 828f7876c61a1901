package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
)

// defaultDenial is the model's feedback when the gate refuses a call
// without a reason.
const defaultDenial = "Corral's permission gate refused this tool call."

// withdrawnDenial answers a can_use_tool the CLI cancelled; the CLI has
// already moved on and ignores it.
const withdrawnDenial = "The permission request was withdrawn."

// onControlRequest answers what the CLI asks of the host. Every request gets
// an answer, an explicit error for those the adapter does not handle.
func (e *Engine) onControlRequest(c *conn, t *turnState, f *frame) {
	req, err := f.controlRequest()
	if err != nil {
		e.logger.Warn("undecodable control request", zap.Error(err))
		e.send(c, errorResponse(f.RequestID, "Corral could not decode this control request: "+err.Error()))
		return
	}
	switch req.Subtype {
	case "can_use_tool":
		// Registered before the next frame is read, so a cancel that
		// follows finds it.
		ctx, cancel := context.WithCancel(c.ctx)
		c.trackPermit(f.RequestID, cancel)
		c.goHandle(func() {
			defer cancel()
			defer c.untrackPermit(f.RequestID)
			e.answerPermission(ctx, c, t, f.RequestID, req)
		})
	case "hook_callback":
		e.answerHook(c, t, f.RequestID, req)
	default:
		e.send(c, errorResponse(f.RequestID, "Corral does not handle the control request "+req.Subtype))
	}
}

// send writes a frame, logging instead of failing: a process that is gone
// is noticed by the turn.
func (e *Engine) send(c *conn, f outFrame) {
	if err := c.send(f); err != nil {
		e.logger.Debug("frame not sent", zap.String("kind", f.frameKind()), zap.Error(err))
	}
}

// answerPermission decides a can_use_tool request through the gate.
func (e *Engine) answerPermission(ctx context.Context, c *conn, t *turnState, requestID string, req controlRequest) {
	call := describeTool(e.opts.Cwd, req.ToolUseID, req.ToolName, req.Input)
	if t != nil {
		e.toolStarted(t, req.ToolUseID, req.ToolName, req.Input)
	}
	if call.Kind == engine.KindEdit {
		p, err := proposeEdit(req.ToolName, call.Path, req.Input)
		if err != nil {
			e.deny(c, t, requestID, req.ToolUseID, "Corral "+err.Error()+".")
			return
		}
		call.Edit = p
	}
	v := e.host.Permit(ctx, call)
	if ctx.Err() != nil {
		e.send(c, successResponse(requestID, permissionDeny{Behavior: "deny", Message: withdrawnDenial, ToolUseID: req.ToolUseID}))
		return
	}
	if !v.Allow {
		msg := v.Message
		if strings.TrimSpace(msg) == "" {
			msg = defaultDenial
		}
		// A refusal is a tool boundary too: waiting steers ride along.
		if steers := e.host.TakeSteers(req.ToolUseID); len(steers) > 0 {
			msg += "\n\n" + steerContext(steers)
		}
		e.deny(c, t, requestID, req.ToolUseID, msg)
		return
	}
	input := req.Input
	if len(bytes.TrimSpace(input)) == 0 || bytes.Equal(bytes.TrimSpace(input), []byte("null")) {
		input = json.RawMessage(`{}`)
	}
	if t != nil {
		t.mu.Lock()
		if st := t.tools[req.ToolUseID]; st != nil {
			st.allowedAt = time.Now()
			st.proposal = call.Edit
		}
		t.mu.Unlock()
	}
	e.send(c, successResponse(requestID, permissionAllow{Behavior: "allow", UpdatedInput: input, ToolUseID: req.ToolUseID}))
}

func (e *Engine) deny(c *conn, t *turnState, requestID, toolUseID, msg string) {
	if t != nil {
		t.mu.Lock()
		if st := t.tools[toolUseID]; st != nil {
			st.denied, st.message = true, msg
		}
		t.mu.Unlock()
	}
	e.send(c, successResponse(requestID, permissionDeny{Behavior: "deny", Message: msg, ToolUseID: toolUseID}))
}

// answerHook answers the adapter's hook callbacks: PreToolUse always asks,
// so the gate sees every call; the PostToolUse hooks hand waiting steers to
// the model and check that an allowed edit wrote what the gate saw.
func (e *Engine) answerHook(c *conn, t *turnState, requestID string, req controlRequest) {
	in := req.HookInput
	switch req.CallbackID {
	case hookPreToolUse:
		e.send(c, successResponse(requestID, askEveryTool()))
	case hookPostToolUse, hookPostToolUseFailure:
		event := in.HookEventName
		if event == "" {
			event = "PostToolUse"
			if req.CallbackID == hookPostToolUseFailure {
				event = "PostToolUseFailure"
			}
		}
		if t != nil {
			e.afterTool(t, in, req.CallbackID == hookPostToolUse)
		}
		steers := e.host.TakeSteers(in.ToolUseID)
		if len(steers) == 0 {
			e.send(c, successResponse(requestID, struct{}{}))
			return
		}
		e.send(c, successResponse(requestID, hookOutput{HookSpecificOutput: hookSpecificOutput{
			HookEventName:     event,
			AdditionalContext: steerContext(steers),
		}}))
	default:
		e.send(c, errorResponse(requestID, "Corral registered no hook callback "+req.CallbackID))
	}
}

// afterTool records how long the tool ran and, for an edit the gate
// allowed, whether the file now holds what the gate was shown.
func (e *Engine) afterTool(t *turnState, in hookInput, succeeded bool) {
	t.mu.Lock()
	st := t.tools[in.ToolUseID]
	var p *engine.EditProposal
	if st != nil {
		st.execMS = in.DurationMS
		p = st.proposal
	}
	t.mu.Unlock()
	if p == nil || !succeeded {
		return
	}
	got, err := os.ReadFile(p.Path)
	if err == nil && bytes.Equal(got, p.After) {
		return
	}
	e.logger.Warn("the file an allowed edit wrote differs from the proposal", zap.String("path", p.Path), zap.String("tool", st.name), zap.Error(err))
	t.mu.Lock()
	st.mismatch = true
	t.mu.Unlock()
}

// steerContext frames steers for the model.
func steerContext(steers []string) string {
	return "The user sent this while you were working:\n\n" + strings.Join(steers, "\n\n")
}
