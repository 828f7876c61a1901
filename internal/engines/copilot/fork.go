package copilot

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Methods of the CLI's server API for whole sessions.
const (
	methodSessionsFork   = "sessions.fork"
	methodSessionsDelete = "sessions.delete"
)

type forkResult struct {
	SessionID string `json:"sessionId"`
}

var (
	_ engine.Forker = (*Engine)(nil)
	_ engine.Judge  = (*Engine)(nil)
)

// Fork branches the conversation with sessions.fork: the CLI copies the
// session's persisted history into a new session in the same home, which
// the runner then copies into the new Corral session's folder and resumes
// there. The original session is left as it was.
func (e *Engine) Fork(ctx context.Context) (string, error) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	c, err := e.ready(ctx)
	if err != nil {
		return "", err
	}
	return e.forkSession(ctx, c)
}

func (e *Engine) forkSession(ctx context.Context, c *cli) (string, error) {
	e.mu.Lock()
	id := e.sessionID
	e.mu.Unlock()
	var res forkResult
	if err := c.conn.Call(ctx, methodSessionsFork, sessionIDParams{SessionID: id}, &res); err != nil {
		return "", c.failure("copilot: fork conversation "+id, err, false)
	}
	if res.SessionID == "" {
		return "", &engine.Failure{Code: event.FailEngineError, Message: "copilot: sessions.fork returned no session id"}
	}
	return res.SessionID, nil
}

// judgeInstructions make the side question's answer a verdict only.
const judgeInstructions = "You are asked a yes-or-no question about the conversation so far. Answer from the conversation alone; do not use tools."

// Judge answers prompt on a fork of the conversation, which it deletes
// afterwards: neither the question nor the answer enters the session's
// conversation, and no tool runs (the fork is offered none, and any
// permission it asks for is refused). The answer's usage is returned,
// estimated from the price table.
func (e *Engine) Judge(ctx context.Context, prompt string) (string, event.UsageData, error) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	c, err := e.ready(ctx)
	if err != nil {
		return "", event.UsageData{}, err
	}
	fork, err := e.forkSession(ctx, c)
	if err != nil {
		return "", event.UsageData{}, err
	}
	j := &sideQuestion{c: c, e: e, id: fork, done: make(chan struct{})}
	e.mu.Lock()
	if e.side == nil {
		e.side = map[string]*sideQuestion{}
	}
	e.side[fork] = j
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.side, fork)
		e.mu.Unlock()
		// The fork was only for this question.
		dctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := c.conn.Call(dctx, methodSessionsDelete, sessionIDParams{SessionID: fork}, nil); err != nil {
			e.log.Warn("delete the goal judge's fork", zap.String("fork", fork), zap.Error(err))
		}
	}()

	params := sessionParams{
		SessionID:         fork,
		Model:             e.set.model,
		Provider:          e.set.provider,
		WorkingDirectory:  e.set.cwd,
		RequestPermission: true,
		EnvValueMode:      "direct",
		SystemMessage:     &systemMessage{Mode: "append", Content: judgeInstructions},
		AvailableTools:    []string{judgeNoTool},
	}
	if err := c.conn.Call(ctx, methodSessionResume, params, nil); err != nil {
		return "", event.UsageData{}, c.failure("copilot: open the goal judge's fork", err, false)
	}
	if err := c.conn.Call(ctx, methodSessionSend, sendParams{SessionID: fork, Prompt: prompt}, nil); err != nil {
		return "", event.UsageData{}, c.failure("copilot: ask the goal judge", err, false)
	}
	select {
	case <-j.done:
	case <-c.gone:
		return "", event.UsageData{}, c.crashFailure()
	case <-ctx.Done():
		abortCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = c.conn.Call(abortCtx, methodSessionAbort, sessionIDParams{SessionID: fork}, nil)
		return "", event.UsageData{}, ctx.Err()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failure != nil {
		return "", j.usage, j.failure
	}
	return j.answer, j.usage, nil
}

// judgeNoTool is a tool name no CLI has: an allowlist of it alone offers
// the judge's fork no tool (an empty list would mean the default set).
const judgeNoTool = "corral-no-tools"

// sideQuestion collects the events of a judge's fork.
type sideQuestion struct {
	c    *cli
	e    *Engine
	id   string
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	answer  string
	usage   event.UsageData
	failure error
}

// onEvent takes one of the fork's session events, on the connection's
// reader goroutine.
func (q *sideQuestion) onEvent(ev sessionEvent) {
	decode := func(v any) bool { return json.Unmarshal(ev.Data, v) == nil }
	switch ev.Type {
	case evAssistantMessage:
		var d assistantMessageData
		if decode(&d) && d.ParentToolCallID == "" && strings.TrimSpace(d.Content) != "" {
			q.mu.Lock()
			q.answer = d.Content
			q.mu.Unlock()
		}
	case evAssistantUsage:
		var d assistantUsageData
		if decode(&d) {
			u := event.UsageData{InputTokens: d.InputTokens, OutputTokens: d.OutputTokens,
				CacheReadTokens: d.CacheReadTokens, CacheWriteTokens: d.CacheWriteTokens, Estimated: true, Model: d.Model}
			u.CostUSD = estimateCost(u)
			q.mu.Lock()
			q.usage.Add(u)
			q.usage.Model = u.Model
			q.mu.Unlock()
		}
	case evPermissionRequested:
		var d permissionRequestedData
		if decode(&d) {
			go q.refuse(d.RequestID)
		}
	case evSessionError:
		var d sessionErrorData
		if decode(&d) {
			q.mu.Lock()
			q.failure = sessionFailure(d)
			q.mu.Unlock()
		}
	case evSessionIdle:
		q.once.Do(func() { close(q.done) })
	}
}

// refuse answers a permission request of the fork: a goal check runs no
// tools.
func (q *sideQuestion) refuse(requestID string) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	d := reject("A goal check runs no tools; answer from the conversation.")
	err := q.c.conn.Call(ctx, methodHandlePermission, permissionAnswer{SessionID: q.id, RequestID: requestID, Result: d}, nil)
	if err != nil {
		q.e.log.Warn("refuse a permission request of the goal judge's fork", zap.Error(err))
	}
}
