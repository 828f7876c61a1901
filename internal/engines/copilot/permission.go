package copilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
)

// Feedback the model gets when a refusal has no message of its own.
const (
	feedbackRefused = "The user refused this tool call."
	feedbackStopped = "The user stopped the turn."
	feedbackNoTurn  = "Corral had no turn running to decide this tool call."
)

// pendingPermission is a permission request the runner is deciding.
type pendingPermission struct {
	id         string
	toolCallID string
	turn       *turn
	cancel     context.CancelFunc
	// completed is set when the CLI resolved the request itself (an abort
	// cancels its pending requests); it then takes no answer.
	completed bool
}

// permissionRequestedLocked starts deciding a permission request.
func (e *Engine) permissionRequestedLocked(c *cli, t *turn, d permissionRequestedData, fx *effects) {
	if _, dup := e.perms[d.RequestID]; dup {
		return
	}
	var req permissionRequest
	if err := json.Unmarshal(d.PermissionRequest, &req); err != nil {
		e.log.Warn("undecodable permission request", zap.Error(err))
		fx.tasks = append(fx.tasks, func() { e.answer(c, d.RequestID, reject("Corral could not read this permission request.")) })
		return
	}
	if t == nil || t.stopping {
		feedback := feedbackNoTurn
		if t != nil {
			feedback = feedbackStopped
		}
		fx.tasks = append(fx.tasks, func() { e.answer(c, d.RequestID, reject(feedback)) })
		return
	}
	ctx, cancel := context.WithCancel(t.ctx)
	p := &pendingPermission{id: d.RequestID, toolCallID: req.ToolCallID, turn: t, cancel: cancel}
	e.perms[d.RequestID] = p
	tool := t.toolNames[req.ToolCallID]
	cwd := e.set.cwd
	fx.tasks = append(fx.tasks, func() {
		defer cancel()
		e.decide(ctx, c, p, req, d.PermissionRequest, tool, cwd)
	})
}

// decide asks the runner about a permission request and answers the CLI.
func (e *Engine) decide(ctx context.Context, c *cli, p *pendingPermission, req permissionRequest, raw json.RawMessage, tool, cwd string) {
	allow, feedback := true, ""
	calls, err := toolCalls(req, raw, tool, cwd)
	if err != nil {
		allow, feedback = false, err.Error()
	} else {
		allow, feedback = e.permit(ctx, calls)
	}

	e.mu.Lock()
	completed, stopping := p.completed, p.turn.stopping
	delete(e.perms, p.id)
	if !allow && p.toolCallID != "" {
		p.turn.denied[p.toolCallID] = feedback
	}
	e.mu.Unlock()
	if completed {
		return
	}
	decision := permissionDecision{Kind: "approve-once"}
	switch {
	case stopping:
		decision = reject(feedbackStopped)
	case ctx.Err() != nil:
		decision = reject(feedbackRefused)
	case !allow:
		decision = reject(feedback)
	}
	e.answer(c, p.id, decision)
}

// permit asks the runner about each call; the request is allowed only if
// every call is.
func (e *Engine) permit(ctx context.Context, calls []engine.ToolCall) (bool, string) {
	allowed := 0
	var messages []string
	for _, call := range calls {
		v := e.host.Permit(ctx, call)
		if v.Allow {
			allowed++
			continue
		}
		if msg := strings.TrimSpace(v.Message); msg != "" {
			messages = append(messages, msg)
		}
	}
	if allowed == len(calls) {
		return true, ""
	}
	if len(messages) == 0 {
		messages = append(messages, feedbackRefused)
	}
	if allowed > 0 {
		messages = append(messages, "The tool call was refused as a whole, so it changed none of its files itself.")
	}
	return false, strings.Join(messages, "\n")
}

// answer sends a decision to the CLI. A CLI that already resolved the
// request answers success false, which is fine.
func (e *Engine) answer(c *cli, requestID string, d permissionDecision) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	var res permissionAnswerResult
	err := c.conn.Call(ctx, methodHandlePermission, permissionAnswer{SessionID: e.sessionID, RequestID: requestID, Result: d}, &res)
	if err != nil && !errors.Is(err, jsonrpc.ErrClosed) {
		e.log.Warn("answer permission request", zap.String("request", requestID), zap.Error(err))
	}
}

func reject(feedback string) permissionDecision {
	if feedback == "" {
		feedback = feedbackRefused
	}
	return permissionDecision{Kind: "reject", Feedback: feedback}
}

// toolCalls turns a permission request into the calls the runner decides:
// one per file for a write, else one.
func toolCalls(req permissionRequest, raw json.RawMessage, tool, cwd string) ([]engine.ToolCall, error) {
	call := engine.ToolCall{ID: req.ToolCallID, Tool: tool, Input: raw}
	if call.Tool == "" {
		call.Tool = req.Kind
	}
	switch req.Kind {
	case "shell":
		call.Kind = engine.KindShell
		call.Command = req.FullCommandText
	case "write":
		edits, err := editProposals(req, cwd)
		if err != nil {
			return nil, err
		}
		calls := make([]engine.ToolCall, 0, len(edits))
		for i := range edits {
			c := call
			c.Kind = engine.KindEdit
			c.Path = edits[i].Path
			c.Edit = &edits[i]
			calls = append(calls, c)
		}
		return calls, nil
	case "read":
		call.Kind = engine.KindRead
		call.Path = absPath(req.Path, cwd)
	case "url":
		call.Kind = engine.KindFetch
		call.URL = req.URL
	case "mcp":
		call.Kind = engine.KindMCP
		call.Server = req.ServerName
		call.MCPTool = req.ToolName
	default:
		call.Kind = engine.KindOther
	}
	return []engine.ToolCall{call}, nil
}

// editProposals reads the whole-file texts a write request carries: for
// each file, the content the CLI read while planning and the content it
// will write. A missing side is a created or deleted file; different
// paths are a move (a deletion and a creation).
func editProposals(req permissionRequest, cwd string) ([]engine.EditProposal, error) {
	var out []engine.EditProposal
	for i, fe := range req.FileEdits {
		switch {
		case fe.Before == nil && fe.After == nil:
			return nil, refusef("Corral cannot review this edit: file %d of the request has neither a before nor an after text", i+1)
		case fe.Before == nil:
			out = append(out, engine.EditProposal{Path: absPath(fe.After.Path, cwd), After: []byte(fe.After.Content)})
		case fe.After == nil:
			out = append(out, engine.EditProposal{Path: absPath(fe.Before.Path, cwd), Before: []byte(fe.Before.Content), Existed: true, Delete: true})
		case absPath(fe.Before.Path, cwd) != absPath(fe.After.Path, cwd):
			out = append(out,
				engine.EditProposal{Path: absPath(fe.Before.Path, cwd), Before: []byte(fe.Before.Content), Existed: true, Delete: true},
				engine.EditProposal{Path: absPath(fe.After.Path, cwd), After: []byte(fe.After.Content)})
		default:
			out = append(out, engine.EditProposal{
				Path: absPath(fe.After.Path, cwd), Before: []byte(fe.Before.Content), Existed: true, After: []byte(fe.After.Content),
			})
		}
	}
	for _, p := range out {
		if p.Path == "" {
			return nil, refusef("Corral cannot review this edit: a file of the request has no path")
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if req.NewFileContents != nil && req.FileName != "" {
		// No preview (the CLI leaves it out when it could not take one):
		// the file as it is now, and the whole new text.
		path := absPath(req.FileName, cwd)
		p := engine.EditProposal{Path: path, After: []byte(*req.NewFileContents)}
		before, err := os.ReadFile(path)
		switch {
		case err == nil:
			p.Before, p.Existed = before, true
		case !errors.Is(err, fs.ErrNotExist):
			return nil, refusef("Corral cannot review this edit: read %s: %v", path, err)
		}
		return []engine.EditProposal{p}, nil
	}
	return nil, refusef("Corral cannot review this edit of %s: the CLI sent no complete text of the file (binary or unreadable files cannot be staged)", req.FileName)
}

// refusal is a request the adapter refuses by itself; its text is the
// feedback the model reads.
type refusal struct{ feedback string }

func (r *refusal) Error() string { return r.feedback }

func refusef(format string, args ...any) error {
	return &refusal{feedback: fmt.Sprintf(format, args...)}
}

func absPath(p, cwd string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cwd, p)
}
