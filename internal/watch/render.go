package watch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/event"
)

// Indents of the transcript: the conversation at the margin, a turn's
// tool calls one step in, what became of them two steps in.
const (
	indent1 = "  "
	indent2 = "    "
	indent3 = "      "
)

// Render returns the transcript lines of one event and updates st, the
// state of the event's session. Lines carry no newline; assistantDelta and
// the bookkeeping events (usage, context) return none but change st.
// Unknown event types are ignored, as docs/events.md asks of shells; a
// known type whose data cannot be read yields one line saying so.
func Render(ev event.Event, st *State, style Style) []string {
	r := renderer{st: st, s: style, ev: ev}
	lines, err := r.render()
	if err != nil {
		return []string{style.Fail.Render(fmt.Sprintf("! event %d (%s) could not be read: %s", ev.Seq, clean(string(ev.Type)), clean(err.Error())))}
	}
	return lines
}

// renderer renders one event.
type renderer struct {
	st *State
	s  Style
	ev event.Event
}

// decode reads an event's data into v; absent data leaves v as it is.
func decode(ev event.Event, v any) error {
	if len(ev.Data) == 0 || string(ev.Data) == "null" {
		return nil
	}
	if err := json.Unmarshal(ev.Data, v); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

func (r *renderer) render() ([]string, error) {
	switch r.ev.Type {
	case event.SessionStarted, event.SessionResumed:
		return r.sessionStarted()
	case event.UserMessage:
		return r.userMessage()
	case event.TurnStarted:
		return r.turnStarted()
	case event.AssistantDelta:
		return r.assistantDelta()
	case event.AssistantText:
		return r.assistantText()
	case event.ToolStarted:
		return r.toolStarted()
	case event.ToolFinished:
		return r.toolFinished()
	case event.AskOpened:
		return r.askOpened()
	case event.AskAnswered:
		return r.askAnswered()
	case event.SteerDelivered, event.SteerRequeued:
		return r.steer()
	case event.HunkStaged:
		return r.hunkStaged()
	case event.HunkDecided:
		return r.hunkDecided()
	case event.EditApplied:
		return r.editApplied()
	case event.TurnEnded:
		return r.turnEnded()
	case event.Stopped:
		return r.stopped()
	case event.Failure:
		return r.failure()
	case event.LogRepaired:
		return r.logRepaired()
	case event.Usage:
		return r.usage()
	case event.Context:
		return nil, decode(r.ev, &r.st.context)
	case event.Retry:
		return r.retry()
	case event.ModeChanged, event.SpendCapSet, event.Rotated, event.Compacted, event.Renamed:
		return r.sessionChange()
	case event.GoalSet, event.GoalCleared, event.GoalCheck:
		return r.goal()
	}
	// queueChanged is reserved without documented fields, and a type this
	// shell does not know is for a newer one.
	return nil, nil
}

func (r *renderer) sessionStarted() ([]string, error) {
	var d event.SessionStartedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	r.st.engine, r.st.mode = d.Engine, d.Mode
	what := "session " + clean(r.st.session)
	if r.ev.Type == event.SessionResumed {
		what += " resumed"
	}
	parts := []string{r.s.Bold.Render("● " + what)}
	if d.Engine != "" {
		parts = append(parts, clean(d.Engine)+" engine")
	}
	if d.Mode != "" {
		parts = append(parts, clean(d.Mode)+" mode")
	}
	if d.Model != "" {
		parts = append(parts, clean(d.Model))
	}
	if d.Unattended {
		parts = append(parts, "unattended")
	}
	if d.Parent != "" {
		parts = append(parts, "continues "+clean(d.Parent))
	}
	line := strings.Join(parts, " · ")
	if d.Cwd != "" {
		line += r.s.Dim.Render(" · " + clean(d.Cwd))
	}
	return []string{line}, nil
}

func (r *renderer) userMessage() ([]string, error) {
	var d event.UserMessageData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	var notes []string
	text := d.Text
	switch d.Kind {
	case "goalCheck":
		notes, text = append(notes, "goal check"), firstLine(text)
	case "loop":
		notes = append(notes, "loop")
	case "inherit":
		notes, text = append(notes, "handoff from the parent session"), firstLine(text)
	}
	if d.Queued {
		notes = append(notes, "queued")
	}
	if d.ID != "" && d.ID == r.st.turnMessage {
		return nil, nil // its turn, already shown, began with it
	}
	r.st.lastUserMessage = d.ID
	return r.message(text, notes), nil
}

// message renders a person's message: "› " before the first line, the
// others aligned under it, and notes dimmed after the last.
func (r *renderer) message(text string, notes []string) []string {
	lines := textLines(text)
	if len(lines) == 0 {
		lines = []string{""}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		lead := "  "
		if i == 0 {
			lead = "› "
		}
		out[i] = r.s.User.Render(lead + l)
	}
	if len(notes) > 0 {
		out[len(out)-1] += r.s.Dim.Render(" · " + strings.Join(notes, " · "))
	}
	return out
}

func (r *renderer) turnStarted() ([]string, error) {
	var d event.TurnStartedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	st := r.st
	st.turnRunning, st.turnStart, st.turnMessage = true, r.ev.TS, d.MessageID
	st.toolSummary = ""
	st.streaming.Reset()
	if d.MessageID != "" && d.MessageID == st.lastUserMessage {
		return nil, nil // its message is the line just above
	}
	// The message was queued, or came before the replayed part: say
	// where its turn begins.
	st.lastUserMessage = d.MessageID
	return r.message(d.Text, []string{fmt.Sprintf("turn %d", d.Turn)}), nil
}

func (r *renderer) assistantDelta() ([]string, error) {
	var d event.TextData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	r.st.streaming.WriteString(d.Text)
	return nil, nil
}

func (r *renderer) assistantText() ([]string, error) {
	var d event.TextData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	r.st.streaming.Reset()
	r.st.lastUserMessage = ""
	return textLines(d.Text), nil
}

func (r *renderer) steer() ([]string, error) {
	var d event.SteerData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	lines := textLines(d.Text)
	if len(lines) == 0 {
		lines = []string{""}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		lead := "        "
		if i == 0 {
			lead = "↳ steer  "
		}
		out[i] = r.s.Steer.Render(lead + l)
	}
	switch {
	case r.ev.Type == event.SteerRequeued:
		out[len(out)-1] += r.s.Dim.Render(" · the turn ended first: queued as the next message")
	case d.Native:
		out[len(out)-1] += r.s.Dim.Render(" · taken mid-turn")
	}
	return out, nil
}
