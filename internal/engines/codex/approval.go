package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
)

// feedbackWait bounds the steer that carries a refusal's reasons.
const feedbackWait = 10 * time.Second

// serveRequest answers one server request, on a goroutine of its own (a
// Permit can take as long as a human does). Every request gets an answer:
// the approvals through the gate, the rest with a refusal, so the server
// never waits on Corral forever.
func (e *Engine) serveRequest(ctx context.Context, srv *serverProc, method string, params json.RawMessage) (any, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Corral is stopping this server"}
	}
	id := string(jsonrpc.RequestID(ctx))
	switch method {
	case rCommandApproval:
		return e.answerCommand(srv, id, params)
	case rFileChangeApproval:
		return e.answerFileChange(srv, id, params)
	case rPermissions:
		// More permissions would let later commands skip approval.
		return permissionsGrant{Scope: "turn"}, nil
	case rElicitation:
		return elicitationAnswer{Action: "decline"}, nil
	case rUserInput:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Corral cannot put questions to the user in the middle of a turn; continue with your best judgement and ask in your reply"}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("Corral does not handle %s", method)}
}

// unreadable refuses an approval request Corral could not decode.
func unreadable(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Corral could not read the approval request: " + err.Error()}
}

func decide(accept bool) approvalDecision {
	if accept {
		return approvalDecision{Decision: "accept"}
	}
	return approvalDecision{Decision: "decline"}
}

// answerCommand puts an escalated command (or a command's network access)
// through the gate.
func (e *Engine) answerCommand(srv *serverProc, requestID string, params json.RawMessage) (any, error) {
	var p commandApprovalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, unreadable(err)
	}
	ts := e.turnFor(p.ThreadID)
	if ts == nil || ts.judge || ts.ended() {
		return decide(false), nil
	}
	ctx, done := ts.requestContext(requestID)
	defer done()

	command := ""
	if p.Command != nil {
		command = *p.Command
	}
	call := engine.ToolCall{
		ID:      p.ItemID,
		Tool:    "exec_command",
		Kind:    engine.KindShell,
		Command: shellScript(command),
		Input:   params,
	}
	if p.ApprovalID != nil && *p.ApprovalID != "" {
		call.ID = *p.ApprovalID
	}
	if p.Kind == "writeStdin" {
		// Input for a process Corral already let run outside the
		// sandbox; itemId names that process's command.
		call.Tool, call.Command = "write_stdin", stdinText(command)
	}
	if nc := p.NetworkApprovalContext; nc != nil {
		call.Kind = engine.KindFetch
		call.URL = networkURL(*nc)
	}
	v := e.opts.Host.Permit(ctx, call)
	if v.Allow {
		return decide(true), nil
	}
	msg := v.Message
	if msg == "" {
		msg = "The command was not approved."
	}
	if p.Kind != "writeStdin" {
		ts.noteDenial(p.ItemID, msg)
	}
	if ctx.Err() == nil {
		e.feedback(srv, ts, p.TurnID, fmt.Sprintf("Corral declined your %s call (%s): %s", call.Tool, call.ID, msg))
	}
	return decide(false), nil
}

func networkURL(nc networkContext) string {
	scheme := map[string]string{"http": "http", "https": "https", "socks5Tcp": "socks5", "socks5Udp": "socks5"}[nc.Protocol]
	if scheme == "" {
		scheme = nc.Protocol
	}
	return scheme + "://" + nc.Host
}

// fileVerdict is the outcome of one file of a patch.
type fileVerdict struct {
	edit    engine.EditProposal
	verdict engine.Verdict
	// writeErr is set when Corral failed to write an allowed file itself.
	writeErr error
}

// answerFileChange stages a patch file by file through Permit (the gate
// and hunk review). Codex applies a patch whole or not at all, so the
// patch is accepted only when every file is allowed. Otherwise it is
// declined; the files that were allowed are written by Corral itself, the
// runner has already written the accepted hunks of partly applied files,
// and the model is told all of it.
func (e *Engine) answerFileChange(srv *serverProc, requestID string, params json.RawMessage) (any, error) {
	var p fileChangeApprovalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, unreadable(err)
	}
	ts := e.turnFor(p.ThreadID)
	if ts == nil || ts.judge || ts.ended() {
		return decide(false), nil
	}
	ctx, done := ts.requestContext(requestID)
	defer done()

	refuse := func(reason string) (any, error) {
		ts.noteDenial(p.ItemID, reason)
		e.feedback(srv, ts, p.TurnID, fmt.Sprintf("Corral declined your patch (%s): %s", p.ItemID, reason))
		return decide(false), nil
	}
	changes, ok := ts.fileChanges(p.ItemID)
	if !ok {
		return refuse("Corral never saw the content of this patch, so it cannot be reviewed. Send it again.")
	}
	edits, err := proposals(changes, e.opts.Cwd, readCurrent)
	if err != nil {
		return refuse("Corral could not stage it for review: " + err.Error() + ". Read the files again and send a new patch.")
	}
	results := make([]fileVerdict, 0, len(edits))
	for i, edit := range edits {
		if ctx.Err() != nil {
			// The turn was stopped: decline what remains unreviewed.
			return decide(false), nil
		}
		id := p.ItemID
		if len(edits) > 1 {
			id = fmt.Sprintf("%s#%d", p.ItemID, i+1)
		}
		input, _ := json.Marshal(changeFor(changes, edit.Path, e.opts.Cwd))
		shown := edit // the runner may keep the pointer
		results = append(results, fileVerdict{edit: edit, verdict: e.opts.Host.Permit(ctx, engine.ToolCall{
			ID:    id,
			Tool:  "apply_patch",
			Kind:  engine.KindEdit,
			Path:  edit.Path,
			Edit:  &shown,
			Input: input,
		})})
	}
	allowed := true
	for _, r := range results {
		allowed = allowed && r.verdict.Allow
	}
	if allowed {
		return decide(true), nil
	}
	if ctx.Err() == nil {
		for i := range results {
			if results[i].verdict.Allow {
				results[i].writeErr = writeProposal(e.opts.Cwd, results[i].edit)
			}
		}
	}
	msg := patchReport(results)
	ts.noteDenial(p.ItemID, msg)
	if ctx.Err() == nil {
		e.feedback(srv, ts, p.TurnID, fmt.Sprintf("Corral declined your patch (%s) as a whole. %s", p.ItemID, msg))
	}
	return decide(false), nil
}

// changeFor finds the protocol change that produced the edit of path, for
// display.
func changeFor(changes []fileUpdateChange, path, cwd string) fileUpdateChange {
	for _, c := range changes {
		if absPath(c.Path, cwd) == path || (c.Kind.MovePath != nil && absPath(*c.Kind.MovePath, cwd) == path) {
			return c
		}
	}
	return fileUpdateChange{Path: path}
}

// patchReport tells the model what became of each file of a declined patch.
func patchReport(results []fileVerdict) string {
	var b strings.Builder
	b.WriteString("Here is what happened to each file; the files on disk are now as described, so read them before editing again:")
	for _, r := range results {
		fmt.Fprintf(&b, "\n- %s: ", r.edit.Path)
		switch {
		case r.verdict.Allow && r.writeErr != nil:
			fmt.Fprintf(&b, "approved, but Corral could not write it (%v); it is unchanged", r.writeErr)
		case r.verdict.Allow && r.edit.Delete:
			b.WriteString("approved and deleted as you proposed")
		case r.verdict.Allow:
			b.WriteString("approved and written exactly as you proposed")
		case r.verdict.Applied:
			b.WriteString("partly applied by the reviewer: ")
			b.WriteString(orDefault(r.verdict.Message, "some of your changes were applied"))
		default:
			b.WriteString("not applied: ")
			b.WriteString(orDefault(r.verdict.Message, "the change was rejected"))
		}
	}
	return b.String()
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// feedback tells the model why Corral refused a call. Codex's decline
// carries no message (the model only sees "rejected by user"), so the
// reasons go in as a steer, sent before the decline: Codex holds a steer
// while a tool call is pending and hands it to the model right after the
// refused call's result.
func (e *Engine) feedback(srv *serverProc, ts *turnState, turnID, text string) {
	if turnID == "" {
		turnID = ts.turnID()
	}
	ctx, cancel := context.WithTimeout(ts.ctx, feedbackWait)
	defer cancel()
	if err := srv.conn.Call(ctx, mTurnSteer, turnSteerParams{ThreadID: ts.threadID, ExpectedTurnID: turnID, Input: textInput(text)}, nil); err != nil {
		e.log.Warn("codex: could not give the model the reason for a refusal", zap.Error(err))
	}
}
