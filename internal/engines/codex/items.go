package codex

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// maxToolOutput bounds the command output a toolFinished event carries;
// the tail is kept, where errors usually are.
const maxToolOutput = 64 << 10

// turnState follows one turn of one thread: the items it has open, the
// text and usage it produced, and the server requests waiting on Corral.
type turnState struct {
	threadID string
	// judge marks a side question: its events are dropped and its
	// approval requests declined.
	judge bool
	// compaction marks the turn thread/compact/start runs; it takes no
	// steers.
	compaction bool
	emit       func(event.Type, any)
	// ctx ends with the turn; Permit calls made for it use it.
	ctx    context.Context
	cancel context.CancelFunc
	idSet  chan struct{} // closed once id is known
	done   chan struct{} // closed at turn/completed

	mu       sync.Mutex
	id       string
	finished bool
	final    turnInfo
	tools    map[string]*toolRun
	changes  map[string][]fileUpdateChange
	denials  map[string]string
	text     string
	usage    event.UsageData
	hasUsage bool
	retries  int
	requests map[string]context.CancelFunc
}

// toolRun is a tool Corral announced with toolStarted.
type toolRun struct {
	tool    string
	started time.Time
}

func newTurnState(parent context.Context, threadID string, emit func(event.Type, any), judge bool) *turnState {
	ctx, cancel := context.WithCancel(parent)
	return &turnState{
		threadID: threadID,
		judge:    judge,
		emit:     emit,
		ctx:      ctx,
		cancel:   cancel,
		idSet:    make(chan struct{}),
		done:     make(chan struct{}),
		tools:    map[string]*toolRun{},
		changes:  map[string][]fileUpdateChange{},
		denials:  map[string]string{},
		requests: map[string]context.CancelFunc{},
	}
}

func (t *turnState) steerable() bool { return !t.judge && !t.compaction }

func (t *turnState) send(typ event.Type, data any) {
	if t.emit != nil && !t.judge {
		t.emit(typ, data)
	}
}

// adopt records the turn's id the first time it is seen, from the
// turn/start response or from the turn's own notifications.
func (t *turnState) adopt(id string) {
	if id == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.id == "" {
		t.id = id
		close(t.idSet)
	}
}

func (t *turnState) turnID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.id
}

// owns reports whether a notification for turnID belongs to this turn.
func (t *turnState) owns(turnID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return turnID == "" || t.id == "" || t.id == turnID
}

// waitID waits until the turn's id is known; ok is false when the turn
// ended first or ctx did.
func (t *turnState) waitID(ctx context.Context) (string, bool) {
	select {
	case <-t.idSet:
		return t.turnID(), true
	case <-t.done:
		return "", false
	case <-ctx.Done():
		return "", false
	}
}

func (t *turnState) ended() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// finish ends the turn. Tools the server left open (a command killed by an
// interrupt, a command a steer sent to the background) are closed as
// stopped so no client shows them running forever.
func (t *turnState) finish(info turnInfo, why string) {
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return
	}
	t.finished = true
	t.final = info
	if t.text == "" {
		for _, it := range info.Items {
			if it.Type == "agentMessage" && it.Text != "" {
				t.text = it.Text
			}
		}
	}
	open := t.tools
	t.tools = map[string]*toolRun{}
	reqs := t.requests
	t.requests = map[string]context.CancelFunc{}
	t.mu.Unlock()

	for id, run := range open {
		t.send(event.ToolFinished, event.ToolFinishedData{
			ToolID:     id,
			Tool:       run.tool,
			Outcome:    "stopped",
			DurationMS: time.Since(run.started).Milliseconds(),
			Message:    why,
		})
	}
	for _, cancel := range reqs {
		cancel()
	}
	close(t.done)
	t.cancel()
}

// requestContext is the context of a server request: it ends with the turn
// or when the server reports the request resolved (after an interrupt).
func (t *turnState) requestContext(id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(t.ctx)
	t.mu.Lock()
	t.requests[id] = cancel
	t.mu.Unlock()
	return ctx, func() {
		t.mu.Lock()
		delete(t.requests, id)
		t.mu.Unlock()
		cancel()
	}
}

func (t *turnState) resolved(id string) {
	t.mu.Lock()
	cancel := t.requests[id]
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (t *turnState) noteDenial(itemID, message string) {
	t.mu.Lock()
	t.denials[itemID] = message
	t.mu.Unlock()
}

func (t *turnState) fileChanges(itemID string) ([]fileUpdateChange, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, ok := t.changes[itemID]
	return ch, ok
}

func (t *turnState) addUsage(u event.UsageData) {
	t.mu.Lock()
	t.usage.Add(u)
	t.usage.Model = u.Model
	t.hasUsage = true
	t.mu.Unlock()
}

// toolInfo describes how an item shows up as a Corral tool; ok is false
// for items that are not tools (messages, reasoning, plans).
func toolInfo(it threadItem) (start event.ToolStartedData, ok bool) {
	start.ToolID = it.ID
	switch it.Type {
	case "commandExecution":
		script := shellScript(it.Command)
		start.Tool, start.Kind = "exec_command", string(engine.KindShell)
		start.Command, start.Summary = script, summarize(script)
	case "fileChange":
		start.Tool, start.Kind = "apply_patch", string(engine.KindEdit)
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		if len(paths) > 0 {
			start.Path = paths[0]
		}
		start.Summary = "edit " + summarize(strings.Join(paths, ", "))
	case "mcpToolCall":
		start.Tool, start.Kind = it.Server+"."+it.Tool, string(engine.KindMCP)
		start.Summary = summarize(it.Server + "." + it.Tool + " " + string(it.Arguments))
	case "dynamicToolCall":
		start.Tool, start.Kind = it.Tool, string(engine.KindOther)
		start.Summary = summarize(it.Tool + " " + string(it.Arguments))
	case "webSearch":
		start.Tool, start.Kind = "web_search", string(engine.KindFetch)
		start.Summary = summarize("search " + it.Query)
	case "imageView":
		start.Tool, start.Kind = "view_image", string(engine.KindRead)
		start.Path, start.Summary = it.Path, summarize("view "+it.Path)
	default:
		return event.ToolStartedData{}, false
	}
	return start, true
}

func summarize(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		return string(r[:199]) + "…"
	}
	return s
}

// itemStarted handles item/started.
func (t *turnState) itemStarted(it threadItem) {
	if it.Type == "fileChange" {
		t.mu.Lock()
		t.changes[it.ID] = it.Changes
		t.mu.Unlock()
	}
	start, ok := toolInfo(it)
	if !ok {
		return
	}
	t.mu.Lock()
	if _, dup := t.tools[it.ID]; dup {
		t.mu.Unlock()
		return
	}
	t.tools[it.ID] = &toolRun{tool: start.Tool, started: time.Now()}
	t.mu.Unlock()
	t.send(event.ToolStarted, start)
}

// itemCompleted handles item/completed.
func (t *turnState) itemCompleted(it threadItem) {
	if it.Type == "agentMessage" {
		t.mu.Lock()
		t.text = it.Text
		t.mu.Unlock()
		t.send(event.AssistantText, event.TextData{Text: it.Text})
		return
	}
	start, ok := toolInfo(it)
	if !ok {
		return
	}
	t.mu.Lock()
	run, open := t.tools[it.ID]
	delete(t.tools, it.ID)
	denial := t.denials[it.ID]
	t.mu.Unlock()
	if !open {
		// Announce a tool the server only reported complete.
		t.send(event.ToolStarted, start)
		run = &toolRun{tool: start.Tool, started: time.Now()}
	}
	fin := event.ToolFinishedData{ToolID: it.ID, Tool: run.tool, Outcome: outcome(it.Status), ExitCode: it.ExitCode}
	if it.DurationMS != nil {
		fin.DurationMS = *it.DurationMS
	} else {
		fin.DurationMS = time.Since(run.started).Milliseconds()
	}
	switch it.Type {
	case "commandExecution":
		if it.AggregatedOutput != nil {
			fin.Output = tail(*it.AggregatedOutput, maxToolOutput)
		}
		if fin.Outcome == "ok" && it.ExitCode != nil && *it.ExitCode != 0 {
			fin.Outcome = "error"
		}
	case "fileChange":
		fin.Output = changeList(it.Changes)
	case "mcpToolCall", "dynamicToolCall":
		if len(it.Error) > 0 && !isNull(it.Error) {
			fin.Message = string(it.Error)
		}
	}
	if fin.Outcome == "denied" {
		fin.Message = denial
	}
	t.send(event.ToolFinished, fin)
}

func outcome(status string) string {
	switch status {
	case "completed", "":
		return "ok"
	case "declined":
		return "denied"
	case "interrupted":
		return "stopped"
	default: // failed
		return "error"
	}
}

func changeList(changes []fileUpdateChange) string {
	var b strings.Builder
	for _, c := range changes {
		verb := map[string]string{"add": "added", "delete": "deleted", "update": "updated"}[c.Kind.Type]
		if verb == "" {
			verb = c.Kind.Type
		}
		fmt.Fprintf(&b, "%s %s", verb, c.Path)
		if c.Kind.MovePath != nil && *c.Kind.MovePath != "" {
			fmt.Fprintf(&b, " -> %s", *c.Kind.MovePath)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut++
	}
	return "…" + s[cut:]
}
