package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"

	"github.com/corral-dev/corral/internal/graph/executor"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// sessionTools are the session_* tools.
type sessionTools struct{ s executor.Sessions }

// SessionNew creates a session.
type SessionNew struct {
	Engine        string  `json:"engine" jsonschema:"script, claude, codex, copilot, or a plugin's name"`
	Cwd           string  `json:"cwd" jsonschema:"absolute path of the session's worktree"`
	Scenario      string  `json:"scenario,omitempty" jsonschema:"script engine: scenario file (absolute path)"`
	Model         string  `json:"model,omitempty"`
	ModelEndpoint string  `json:"modelEndpoint,omitempty" jsonschema:"base URL of the model API"`
	Mode          string  `json:"mode,omitempty" jsonschema:"review (default), auto or readonly"`
	Unattended    bool    `json:"unattended,omitempty" jsonschema:"nobody answers asks: they are refused at once"`
	SpendCapUSD   float64 `json:"spendCapUsd,omitempty" jsonschema:"stop once the session has spent this many US dollars"`
}

// SessionRef names a session.
type SessionRef struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
}

// SessionCreated is session_new's output.
type SessionCreated struct {
	SessionID string `json:"sessionId"`
}

func (t *sessionTools) create(ctx context.Context, in SessionNew) (*SessionCreated, string, error) {
	if !filepath.IsAbs(in.Cwd) {
		return nil, "", wire.Errorf(wire.CodeBadRequest, "cwd %q: want an absolute path", in.Cwd)
	}
	id, err := t.s.Create(ctx, wire.Spec{Engine: in.Engine, Cwd: in.Cwd, Scenario: in.Scenario, Model: in.Model,
		ModelEndpoint: in.ModelEndpoint, Mode: in.Mode, Unattended: in.Unattended, SpendCapUSD: in.SpendCapUSD})
	if err != nil {
		return nil, "", err
	}
	return &SessionCreated{SessionID: id}, "", nil
}

// SessionSend sends a message.
type SessionSend struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
	Text      string `json:"text" jsonschema:"the message"`
}

// command runs a control command and returns its result object.
func (t *sessionTools) command(ctx context.Context, id string, cmd command.Request) (*json.RawMessage, string, error) {
	reply, err := t.s.Command(ctx, id, cmd)
	if err != nil {
		return nil, "", err
	}
	raw := reply.Result
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	return &raw, "", nil
}

func (t *sessionTools) send(ctx context.Context, in SessionSend) (*json.RawMessage, string, error) {
	return t.command(ctx, in.SessionID, command.Send{Text: in.Text})
}

// SessionWait waits for a turn's end or a person.
type SessionWait struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
	// From is the first seq to read; 0 starts after the session's last
	// event before the call (the turn running now, or the next one).
	From int64 `json:"from,omitempty" jsonschema:"first event seq to follow (default: from the session's current turn)"`
}

func (t *sessionTools) wait(ctx context.Context, in SessionWait) (*executor.WaitResult, string, error) {
	from := in.From
	if from <= 0 {
		var err error
		if from, err = currentTurn(ctx, t.s, in.SessionID); err != nil {
			return nil, "", err
		}
	}
	w, err := executor.Wait(ctx, t.s, in.SessionID, from)
	if err != nil {
		return nil, "", err
	}
	return w, "", nil
}

// currentTurn is the seq a wait starts from: the running turn's start, or
// the event after the last one when no turn runs.
func currentTurn(ctx context.Context, s executor.Sessions, id string) (int64, error) {
	reply, err := s.Command(ctx, id, command.GetStatus{})
	if err != nil {
		return 0, err
	}
	var st command.Status
	if err := json.Unmarshal(reply.Result, &st); err != nil {
		return 0, err
	}
	if st.State != wire.StateWorking {
		return st.LastSeq + 1, nil
	}
	ev, err := s.Events(ctx, id, 1, false)
	if err != nil {
		return 0, err
	}
	defer ev.Close()
	from := int64(1)
	for {
		e, err := ev.Next(ctx)
		if err != nil {
			return from, nil
		}
		if e.Type == event.TurnStarted {
			from = e.Seq
		}
	}
}

// SessionAnswer answers an ask.
type SessionAnswer struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
	AskID     string `json:"askId" jsonschema:"the ask's id (a1, a2, …)"`
	Decision  string `json:"decision" jsonschema:"allow or deny"`
	Note      string `json:"note,omitempty" jsonschema:"a note for the agent"`
}

func (t *sessionTools) answer(ctx context.Context, in SessionAnswer) (*json.RawMessage, string, error) {
	return t.command(ctx, in.SessionID, command.Answer{AskID: in.AskID, Decision: in.Decision, Note: in.Note})
}

// SessionDecideHunk decides a hunk.
type SessionDecideHunk struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
	EditID    string `json:"editId,omitempty" jsonschema:"the edit's id (e1, …); may be left out when one edit is pending"`
	HunkID    string `json:"hunkId" jsonschema:"the hunk's id (h1, …), or EDIT/HUNK"`
	Decision  string `json:"decision" jsonschema:"accept or reject"`
	Note      string `json:"note,omitempty" jsonschema:"a note for the agent"`
}

func (t *sessionTools) decideHunk(ctx context.Context, in SessionDecideHunk) (*json.RawMessage, string, error) {
	return t.command(ctx, in.SessionID, command.DecideHunk{EditID: in.EditID, HunkID: in.HunkID, Decision: in.Decision, Note: in.Note})
}

func (t *sessionTools) status(ctx context.Context, in SessionRef) (*json.RawMessage, string, error) {
	return t.command(ctx, in.SessionID, command.GetStatus{})
}

func (t *sessionTools) stop(ctx context.Context, in SessionRef) (*json.RawMessage, string, error) {
	return t.command(ctx, in.SessionID, command.Stop{})
}

// SessionEvents asks for a page of events.
type SessionEvents struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
	From      int64  `json:"from,omitempty" jsonschema:"first seq (default 1)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many events (default 100, at most 1000)"`
}

// EventsPage is a page of events and where the next one starts.
type EventsPage struct {
	Events []event.Event `json:"events"`
	// Next is the seq to ask for next; More says whether the log went
	// on past this page.
	Next int64 `json:"next"`
	More bool  `json:"more"`
}

func (t *sessionTools) events(ctx context.Context, in SessionEvents) (*EventsPage, string, error) {
	limit := in.Limit
	switch {
	case limit <= 0:
		limit = 100
	case limit > 1000:
		limit = 1000
	}
	from := max(in.From, 1)
	ev, err := t.s.Events(ctx, in.SessionID, from, false)
	if err != nil {
		return nil, "", err
	}
	defer ev.Close()
	page := &EventsPage{Events: []event.Event{}, Next: from}
	for {
		e, err := ev.Next(ctx)
		if errors.Is(err, io.EOF) {
			return page, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		if len(page.Events) == limit {
			page.More = true
			return page, "", nil
		}
		page.Events = append(page.Events, e)
		page.Next = e.Seq + 1
	}
}
