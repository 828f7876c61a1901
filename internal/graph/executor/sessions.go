// Package executor runs graph nodes as ordinary Corral sessions: it claims
// a node, routes it, builds its briefing from the run, runs it in a
// session (so the gate, hunk review, the event log and spend caps apply),
// reads the structured result from the final answer, checks changed-file
// claims against git, and records the outcome under its ticket. It needs
// only a narrow view of a supervisor (Sessions), which the supervisor's Go
// client and its session manager both provide.
package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Sessions is what the executor needs of a supervisor: create a session,
// send it commands, read its events, delete it.
type Sessions interface {
	Create(ctx context.Context, spec wire.Spec) (string, error)
	Command(ctx context.Context, id string, cmd command.Request) (*wire.Reply, error)
	// Events streams a session's events from seq from; with follow it
	// goes on with live events.
	Events(ctx context.Context, id string, from int64, follow bool) (Events, error)
	Delete(ctx context.Context, id string) error
}

// Events is a session's event stream.
type Events interface {
	// Next returns the next event; io.EOF ends a stream that does not
	// follow.
	Next(ctx context.Context) (event.Event, error)
	Close() error
}

// WaitState is why a wait ended.
type WaitState string

// Wait states.
const (
	TurnEnded  WaitState = "turnEnded"  // the turn ended (see Outcome)
	NeedsHuman WaitState = "needsHuman" // an ask or a staged hunk waits for a person
	Idle       WaitState = "idle"       // nothing runs or waits
)

// WaitResult is what a session's turn came to.
type WaitResult struct {
	State WaitState `json:"state"`
	// Outcome is the turn's outcome: done, stopped, failed, interrupted.
	Outcome string `json:"outcome,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	// Text is the turn's assistant text, its messages joined.
	Text string `json:"text,omitempty"`
	// Failure is the turn's failure, when it had one.
	Failure *event.FailureData `json:"failure,omitempty"`
	Asks    []OpenAsk          `json:"asks,omitempty"`
	Edits   []OpenEdit         `json:"edits,omitempty"`
	// LastSeq is the seq of the last event read: wait again from
	// LastSeq+1 to go on.
	LastSeq int64 `json:"lastSeq"`
}

// OpenAsk is an ask waiting for a person.
type OpenAsk struct {
	AskID   string `json:"askId"`
	Tool    string `json:"tool,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Command string `json:"command,omitempty"`
	Path    string `json:"path,omitempty"`
}

// OpenEdit is a staged edit with hunks waiting for review.
type OpenEdit struct {
	EditID string   `json:"editId"`
	Path   string   `json:"path,omitempty"`
	Hunks  []string `json:"hunks"`
}

// maxText bounds the text a wait keeps of a turn.
const maxText = 1 << 20

// Wait follows session id's events from seq from until its turn ends or a
// person is needed (an ask, a hunk to review). It first asks the session's
// status, so a wait on a session already waiting for a person, or already
// idle with nothing queued, returns at once.
func Wait(ctx context.Context, s Sessions, id string, from int64) (*WaitResult, error) {
	st, err := status(ctx, s, id)
	if err != nil {
		return nil, err
	}
	if st.State == wire.StateWaitingForApproval || st.State == wire.StateWaitingForReview {
		return humanFromStatus(ctx, s, id, st)
	}
	if from <= 0 {
		from = 1
	}
	if (st.State == wire.StateIdle || st.State == wire.StateFailed || st.State == wire.StateStopped) && len(st.Queued) == 0 && st.LastSeq < from {
		return &WaitResult{State: Idle, LastSeq: st.LastSeq}, nil
	}
	ev, err := s.Events(ctx, id, from, true)
	if err != nil {
		return nil, err
	}
	defer ev.Close()
	w := &WaitResult{LastSeq: from - 1}
	var text strings.Builder
	open := newOpenItems()
	for {
		e, err := ev.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("follow session %s: %w", id, err)
		}
		w.LastSeq = e.Seq
		open.observe(e)
		switch e.Type {
		case event.TurnStarted:
			var d event.TurnStartedData
			json.Unmarshal(e.Data, &d)
			w.Turn = d.Turn
			text.Reset()
			w.Failure = nil
		case event.AssistantText:
			var d event.TextData
			json.Unmarshal(e.Data, &d)
			if text.Len() > 0 {
				text.WriteString("\n\n")
			}
			if text.Len()+len(d.Text) <= maxText {
				text.WriteString(d.Text)
			}
		case event.Failure:
			var d event.FailureData
			json.Unmarshal(e.Data, &d)
			w.Failure = &d
		case event.TurnEnded:
			var d event.TurnEndedData
			json.Unmarshal(e.Data, &d)
			w.State, w.Outcome, w.Turn, w.Text = TurnEnded, d.Outcome, d.Turn, text.String()
			return w, nil
		case event.AskOpened, event.HunkStaged:
			if open.empty() {
				continue
			}
			// The log may hold the answer further on; the session's
			// status says whether a person is needed now.
			st, err := status(ctx, s, id)
			if err != nil {
				return nil, err
			}
			if st.State == wire.StateWaitingForApproval || st.State == wire.StateWaitingForReview {
				w.State = NeedsHuman
				w.Asks, w.Edits = open.lists()
				return w, nil
			}
		}
	}
}

// openItems tracks the asks and review hunks a session's log leaves open.
type openItems struct {
	asks  map[string]OpenAsk
	edits map[string]*OpenEdit
}

func newOpenItems() *openItems {
	return &openItems{asks: map[string]OpenAsk{}, edits: map[string]*OpenEdit{}}
}

func (o *openItems) observe(e event.Event) {
	switch e.Type {
	case event.AskOpened:
		var d event.AskOpenedData
		json.Unmarshal(e.Data, &d)
		o.asks[d.AskID] = OpenAsk{AskID: d.AskID, Tool: d.Tool, Reason: d.Reason, Command: d.Command, Path: d.Path}
	case event.AskAnswered:
		var d event.AskAnsweredData
		json.Unmarshal(e.Data, &d)
		delete(o.asks, d.AskID)
	case event.HunkStaged:
		var d event.HunkStagedData
		json.Unmarshal(e.Data, &d)
		if !d.Auto {
			oe := &OpenEdit{EditID: d.EditID, Path: d.Path}
			for _, h := range d.Edit.Hunks {
				oe.Hunks = append(oe.Hunks, h.ID)
			}
			o.edits[d.EditID] = oe
		}
	case event.HunkDecided:
		var d event.HunkDecidedData
		json.Unmarshal(e.Data, &d)
		if oe := o.edits[d.EditID]; oe != nil {
			oe.Hunks = remove(oe.Hunks, d.HunkID)
			if len(oe.Hunks) == 0 {
				delete(o.edits, d.EditID)
			}
		}
	}
}

func (o *openItems) empty() bool { return len(o.asks) == 0 && len(o.edits) == 0 }

// lists returns the open items in a stable order.
func (o *openItems) lists() ([]OpenAsk, []OpenEdit) {
	var asks []OpenAsk
	var edits []OpenEdit
	for _, a := range o.asks {
		asks = append(asks, a)
	}
	for _, e := range o.edits {
		edits = append(edits, *e)
	}
	sort.Slice(asks, func(i, j int) bool { return asks[i].AskID < asks[j].AskID })
	sort.Slice(edits, func(i, j int) bool { return edits[i].EditID < edits[j].EditID })
	return asks, edits
}

// humanFromStatus describes what a session waiting for a person waits on,
// reading the open asks and edits from its log.
func humanFromStatus(ctx context.Context, s Sessions, id string, st *command.Status) (*WaitResult, error) {
	w := &WaitResult{State: NeedsHuman, LastSeq: st.LastSeq}
	ev, err := s.Events(ctx, id, 1, false)
	if err != nil {
		return nil, err
	}
	defer ev.Close()
	open := newOpenItems()
	for {
		e, err := ev.Next(ctx)
		if err != nil {
			break
		}
		open.observe(e)
	}
	w.Asks, w.Edits = open.lists()
	return w, nil
}

func remove(xs []string, x string) []string {
	out := xs[:0]
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// status asks a session for its status.
func status(ctx context.Context, s Sessions, id string) (*command.Status, error) {
	reply, err := s.Command(ctx, id, command.GetStatus{})
	if err != nil {
		return nil, err
	}
	var st command.Status
	if err := json.Unmarshal(reply.Result, &st); err != nil {
		return nil, fmt.Errorf("status of session %s: %w", id, err)
	}
	return &st, nil
}
