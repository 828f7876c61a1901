package claude

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// turnState is one turn on one CLI process. The reader goroutine fills it
// from frames; permission handlers and stop requests touch it too, under mu.
type turnState struct {
	conn  *conn
	quiet bool // compaction: no text and no per-call usage events
	done  chan struct{}
	once  sync.Once

	mu            sync.Mutex
	result        *resultFrame
	resultErr     error
	stopRequested bool // by Interrupt or the turn's context
	interruptSent bool
	stopTimedOut  bool
	authFailed    bool // the API rejected the key
	apiError      string
	lastText      string
	calls         map[string]*callUsage // open model calls, by parent tool use id
	tools         map[string]*toolState
	compactResult string
	compactError  string
	compactTokens int64
	// reset is set by a conversation_reset frame (a /clear): the next
	// system/init names the new conversation, which newConv then holds.
	reset   bool
	newConv string
}

// toolState follows one tool call from tool_use to tool_result.
type toolState struct {
	name      string
	kind      engine.Kind
	started   time.Time
	allowedAt time.Time
	denied    bool
	message   string
	execMS    *int64
	// proposal is the edit the gate allowed; the written file is checked
	// against it.
	proposal *engine.EditProposal
	mismatch bool
	finished bool
}

func newTurn(c *conn, quiet bool) *turnState {
	return &turnState{
		conn:  c,
		quiet: quiet,
		done:  make(chan struct{}),
		calls: map[string]*callUsage{},
		tools: map[string]*toolState{},
	}
}

func (t *turnState) finish() { t.once.Do(func() { close(t.done) }) }

// currentTurn is the running turn if it runs on c.
func (e *Engine) currentTurn(c *conn) *turnState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turn != nil && e.turn.conn == c {
		return e.turn
	}
	return nil
}

// handleFrame is the reader goroutine's handler for every frame that is not
// an answer to the host's own requests.
func (e *Engine) handleFrame(c *conn, f *frame) {
	t := e.currentTurn(c)
	switch f.Type {
	case typeControlRequest:
		e.onControlRequest(c, t, f)
	case typeSystem:
		e.onSystem(t, f)
	case typeStreamEvent:
		if t != nil {
			e.onStreamEvent(t, f)
		}
	case typeAssistant:
		if t != nil {
			e.onAssistant(t, f)
		}
	case typeUser:
		if t != nil {
			e.onUser(t, f)
		}
	case typeResult:
		if t != nil {
			e.onResult(t, f)
		}
	case typeConversationReset:
		if t != nil {
			t.mu.Lock()
			t.reset = true
			t.mu.Unlock()
		}
	}
}

func (e *Engine) onSystem(t *turnState, f *frame) {
	switch f.Subtype {
	case "init", "api_retry", "status", "compact_boundary":
	default:
		return
	}
	s, err := f.system()
	if err != nil {
		e.logger.Warn("undecodable system frame", zap.Error(err))
		return
	}
	switch f.Subtype {
	case "init":
		cleared := false
		if t != nil {
			t.mu.Lock()
			cleared = t.reset && f.SessionID != ""
			if cleared {
				t.reset, t.newConv = false, f.SessionID
			}
			t.mu.Unlock()
		}
		if cleared {
			// Recorded before the turn ends, when the runner copies
			// the folder: the CLI may not have written the new
			// conversation's entries yet (stored.go).
			e.mu.Lock()
			convs := e.convs
			e.mu.Unlock()
			if err := convs.record(f.SessionID, begun{}); err != nil {
				e.logger.Error("record the conversation a clear began", zap.Error(err))
			}
		}
		e.mu.Lock()
		if s.Model != "" {
			e.model = s.Model
		}
		switch {
		case cleared:
			// A /clear: the CLI goes on in a new conversation, whose
			// cumulative cost starts again from zero.
			e.logger.Info("the conversation was cleared", zap.String("from", e.convID), zap.String("to", f.SessionID))
			e.convID, e.cost = f.SessionID, costLedger{known: true}
		case f.SessionID != "" && f.SessionID != e.convID && e.forkFrom == "":
			// The CLI names the conversation it stores; resume that one.
			e.logger.Warn("the claude CLI reports another conversation id", zap.String("want", e.convID), zap.String("got", f.SessionID))
			e.convID = f.SessionID
		}
		// The CLI has taken a message: a new process resumes the
		// conversation. Its file may lag behind (stored.go); a process
		// that exits on its own writes it first.
		e.persisted, e.forkFrom = true, ""
		e.mu.Unlock()
	case "api_retry":
		if t == nil {
			return
		}
		if isAuthError(s.ErrorStatus, s.Error) {
			// A rejected key is retried for minutes; stop at the first
			// sign of it and report the sign-in as expired instead.
			t.mu.Lock()
			t.authFailed = true
			t.mu.Unlock()
			e.stop(t, false)
			return
		}
		e.host.Emit(event.Retry, event.RetryData{
			Attempt:    s.Attempt,
			MaxRetries: s.MaxRetries,
			DelayMS:    s.RetryDelayMS,
			Error:      retryError(s),
		})
	case "status":
		if t != nil && s.CompactResult != "" {
			t.mu.Lock()
			t.compactResult, t.compactError = s.CompactResult, s.CompactError
			t.mu.Unlock()
		}
	case "compact_boundary":
		if t != nil && s.CompactMetadata != nil {
			t.mu.Lock()
			t.compactTokens = s.CompactMetadata.PostTokens
			t.mu.Unlock()
		}
	}
}

// isAuthError reports an API error that means the key was rejected.
func isAuthError(status *int, kind string) bool {
	return (status != nil && *status == 401) || kind == "authentication_failed"
}

func retryError(s systemFrame) string {
	var b strings.Builder
	if s.ErrorStatus != nil {
		b.WriteString("HTTP ")
		b.WriteString(strconv.Itoa(*s.ErrorStatus))
	}
	if s.Error != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(s.Error)
	}
	if b.Len() == 0 {
		return "model request failed"
	}
	return b.String()
}

func (e *Engine) onStreamEvent(t *turnState, f *frame) {
	ev, err := f.streamEvent()
	if err != nil {
		e.logger.Warn("undecodable stream event", zap.Error(err))
		return
	}
	key := ""
	if f.ParentToolUseID != nil {
		key = *f.ParentToolUseID
	}
	switch ev.Type {
	case "message_start":
		cu := &callUsage{}
		if ev.Message != nil {
			cu.model = ev.Message.Model
			cu.merge(ev.Message.Usage)
		}
		t.mu.Lock()
		t.calls[key] = cu
		t.mu.Unlock()
	case "content_block_delta":
		if key == "" && !t.quiet && ev.Delta != nil && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			e.host.Emit(event.AssistantDelta, event.TextData{Text: ev.Delta.Text})
		}
	case "message_delta":
		if ev.Usage == nil {
			return
		}
		t.mu.Lock()
		if cu := t.calls[key]; cu != nil {
			cu.merge(*ev.Usage)
		}
		t.mu.Unlock()
	case "message_stop":
		t.mu.Lock()
		cu := t.calls[key]
		delete(t.calls, key)
		t.mu.Unlock()
		if cu == nil || t.quiet {
			return
		}
		e.host.Emit(event.Usage, cu.usageData())
		if key == "" {
			e.mu.Lock()
			window := windowFor(cu.model, e.windows)
			e.mu.Unlock()
			e.host.Emit(event.Context, cu.contextData(window))
		}
	}
}

func (e *Engine) onAssistant(t *turnState, f *frame) {
	a, blocks, err := f.assistant()
	if err != nil {
		e.logger.Warn("undecodable assistant frame", zap.Error(err))
		return
	}
	if a.IsAPIError || a.Error != "" {
		// A synthetic message standing for an API error: the result will
		// carry the error; it is not the model's text.
		var text string
		for _, b := range blocks {
			text += b.Text
		}
		t.mu.Lock()
		t.apiError = text
		if isAuthError(a.APIErrorStatus, a.Error) {
			t.authFailed = true
		}
		t.mu.Unlock()
		return
	}
	topLevel := f.ParentToolUseID == nil
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if !topLevel || t.quiet || b.Text == "" {
				continue
			}
			t.mu.Lock()
			t.lastText = b.Text
			t.mu.Unlock()
			e.host.Emit(event.AssistantText, event.TextData{Text: b.Text})
		case "tool_use":
			e.toolStarted(t, b.ID, b.Name, b.Input)
		}
	}
}

// toolStarted records a tool call and emits toolStarted once per call.
func (e *Engine) toolStarted(t *turnState, id, name string, input []byte) {
	if id == "" {
		return
	}
	t.mu.Lock()
	if _, seen := t.tools[id]; seen {
		t.mu.Unlock()
		return
	}
	call := describeTool(e.opts.Cwd, id, name, input)
	t.tools[id] = &toolState{name: name, kind: call.Kind, started: time.Now()}
	t.mu.Unlock()
	e.host.Emit(event.ToolStarted, event.ToolStartedData{
		ToolID:  id,
		Tool:    name,
		Kind:    string(call.Kind),
		Summary: summarize(call, input),
		Command: call.Command,
		Path:    call.Path,
		URL:     call.URL,
	})
}

func (e *Engine) onUser(t *turnState, f *frame) {
	u, blocks, err := f.user()
	if err != nil {
		e.logger.Warn("undecodable user frame", zap.Error(err))
		return
	}
	rejected := map[string]bool{}
	for _, m := range u.ToolResultMeta {
		if m.NonExecutionKind == "user-rejected" {
			rejected[m.ID] = true
		}
	}
	for _, b := range blocks {
		if b.Type != "tool_result" || b.ToolUseID == "" {
			continue
		}
		e.toolFinished(t, b, rejected[b.ToolUseID])
	}
}

func (e *Engine) toolFinished(t *turnState, b contentBlock, rejected bool) {
	now := time.Now()
	t.mu.Lock()
	st := t.tools[b.ToolUseID]
	if st == nil {
		st = &toolState{started: now}
		t.tools[b.ToolUseID] = st
	}
	if st.finished {
		t.mu.Unlock()
		return
	}
	st.finished = true
	stopping := t.stopRequested || t.interruptSent
	out := textOf(b.Content)
	data := event.ToolFinishedData{ToolID: b.ToolUseID, Tool: st.name, Output: trimOutput(out)}
	switch {
	case st.denied:
		data.Outcome, data.Message = "denied", st.message
	case rejected || (stopping && b.IsError):
		data.Outcome = "stopped"
	case b.IsError:
		data.Outcome = "error"
	default:
		data.Outcome = "ok"
	}
	if st.mismatch {
		data.Message = "the file Claude wrote differs from the edit the gate allowed"
	}
	switch {
	case st.execMS != nil:
		data.DurationMS = *st.execMS
	case !st.allowedAt.IsZero():
		data.DurationMS = now.Sub(st.allowedAt).Milliseconds()
	default:
		data.DurationMS = now.Sub(st.started).Milliseconds()
	}
	if st.kind == engine.KindShell && (data.Outcome == "ok" || data.Outcome == "error") {
		data.ExitCode = bashExitCode(out, b.IsError)
	}
	t.mu.Unlock()
	e.host.Emit(event.ToolFinished, data)
}

func (e *Engine) onResult(t *turnState, f *frame) {
	r, err := f.result()
	t.mu.Lock()
	if err != nil {
		t.resultErr = err
	} else {
		t.result = &r
	}
	t.mu.Unlock()
	t.finish()
}
