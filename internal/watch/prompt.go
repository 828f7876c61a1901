package watch

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// Request is a control command for one session.
type Request struct {
	Session string
	Cmd     command.Request
}

// Choice is what a person decided on the open prompt.
type Choice int

// Choices. On an ask only Yes and No mean something.
const (
	ChoiceYes    Choice = iota + 1 // allow the ask, accept the hunk
	ChoiceNo                       // deny the ask, reject the hunk
	ChoiceAllYes                   // accept every undecided hunk of the edit
	ChoiceAllNo                    // reject every undecided hunk of the edit
)

// Prompt is one decision a person is asked for: an open ask, or one hunk
// of an edit staged for review.
type Prompt struct {
	Session string
	// Ask is set for an ask.
	Ask *event.AskOpenedData
	// EditID, Path and Hunk are set for a hunk; Index counts from 1 among
	// the Count hunks of its edit.
	EditID string
	Path   string
	Hunk   hunks.Hunk
	Index  int
	Count  int

	sent bool // this shell sent the decision; its event has not come yet
}

// IsAsk tells an ask from a hunk.
func (p *Prompt) IsAsk() bool { return p.Ask != nil }

// Name is how messages name the prompt: "ask a3", "hunk e2/h1".
func (p *Prompt) Name() string {
	if p.IsAsk() {
		return "ask " + clean(p.Ask.AskID)
	}
	return "hunk " + clean(p.EditID) + "/" + clean(p.Hunk.ID)
}

// Prompter keeps the decisions waiting for a person, in the order they
// opened, across every watched session. It sees each session's events,
// hands out the prompt to show, turns a person's choice into the commands
// that carry it, and drops a prompt when the event stream shows it decided,
// by this shell or any other: the first answer wins.
type Prompter struct {
	pending []*Prompt
	live    map[string]bool // sessions whose backlog has been read
}

// NewPrompter returns a prompter with nothing pending.
func NewPrompter() *Prompter {
	return &Prompter{live: make(map[string]bool)}
}

// Live marks a session's backlog as read: from now on its events happen
// while this shell watches, so its open decisions are prompted.
func (p *Prompter) Live(session string) { p.live[session] = true }

// Closed is a prompt the event stream closed.
type Closed struct {
	Prompt *Prompt
	// Elsewhere is true when a person answered it from another shell
	// while this one was watching.
	Elsewhere bool
}

// Observe follows one event of a session and returns the prompts it
// closed.
func (p *Prompter) Observe(session string, ev event.Event) []Closed {
	switch ev.Type {
	case event.AskOpened:
		var d event.AskOpenedData
		if decode(ev, &d) == nil && d.AskID != "" {
			p.pending = append(p.pending, &Prompt{Session: session, Ask: &d})
		}
	case event.HunkStaged:
		var d event.HunkStagedData
		if decode(ev, &d) != nil || d.Auto || d.Edit == nil {
			// Auto-mode edits are already accepted; rejecting one later is
			// a deliberate act (`supervisor hunk`), not a prompt.
			return nil
		}
		path := d.Path
		if path == "" {
			path = d.Edit.Path
		}
		for i, h := range d.Edit.Hunks {
			p.pending = append(p.pending, &Prompt{Session: session, EditID: d.EditID, Path: path, Hunk: h, Index: i + 1, Count: len(d.Edit.Hunks)})
		}
	case event.AskAnswered:
		var d event.AskAnsweredData
		if decode(ev, &d) == nil {
			return p.close(session, d.By, func(q *Prompt) bool { return q.IsAsk() && q.Ask.AskID == d.AskID })
		}
	case event.HunkDecided:
		var d event.HunkDecidedData
		if decode(ev, &d) == nil {
			return p.close(session, d.By, func(q *Prompt) bool { return !q.IsAsk() && q.EditID == d.EditID && q.Hunk.ID == d.HunkID })
		}
	case event.TurnEnded:
		// Every ask and hunk of a turn is closed before it ends; this only
		// guards against a log that breaks that promise.
		return p.close(session, "", func(q *Prompt) bool { return true })
	}
	return nil
}

// close drops the session's prompts that match.
func (p *Prompter) close(session, by string, match func(*Prompt) bool) []Closed {
	var closed []Closed
	kept := p.pending[:0]
	for _, q := range p.pending {
		if q.Session == session && match(q) {
			closed = append(closed, Closed{Prompt: q, Elsewhere: by == "user" && !q.sent && p.live[session]})
			continue
		}
		kept = append(kept, q)
	}
	clear(p.pending[len(kept):])
	p.pending = kept
	return closed
}

// Forget drops every prompt of a session, for one that was deleted.
func (p *Prompter) Forget(session string) {
	p.close(session, "", func(*Prompt) bool { return true })
	delete(p.live, session)
}

// Current is the prompt to show: the oldest undecided one of a live
// session, or nil.
func (p *Prompter) Current() *Prompt {
	for _, q := range p.pending {
		if !q.sent && p.live[q.Session] {
			return q
		}
	}
	return nil
}

// Waiting counts the prompts that will show after the current one.
func (p *Prompter) Waiting() int {
	n := 0
	for _, q := range p.pending {
		if !q.sent && p.live[q.Session] {
			n++
		}
	}
	return max(n-1, 0)
}

// Decide applies a person's choice, with an optional note, to the current
// prompt and returns the commands to send. The prompt stays pending, but
// no longer current, until its event comes. A choice that does not apply
// (accept-all on an ask) returns nothing.
func (p *Prompter) Decide(choice Choice, note string) []Request {
	cur := p.Current()
	if cur == nil {
		return nil
	}
	if cur.IsAsk() {
		decision := command.DecisionAllow
		switch choice {
		case ChoiceYes:
		case ChoiceNo:
			decision = command.DecisionDeny
		default:
			return nil
		}
		cur.sent = true
		return []Request{{Session: cur.Session, Cmd: command.Answer{AskID: cur.Ask.AskID, Decision: decision, Note: note}}}
	}
	decision := command.DecisionAccept
	if choice == ChoiceNo || choice == ChoiceAllNo {
		decision = command.DecisionReject
	}
	targets := []*Prompt{cur}
	if choice == ChoiceAllYes || choice == ChoiceAllNo {
		targets = targets[:0]
		for _, q := range p.pending {
			if !q.sent && !q.IsAsk() && q.Session == cur.Session && q.EditID == cur.EditID {
				targets = append(targets, q)
			}
		}
	}
	reqs := make([]Request, 0, len(targets))
	for _, q := range targets {
		q.sent = true
		reqs = append(reqs, Request{Session: q.Session, Cmd: command.DecideHunk{EditID: q.EditID, HunkID: q.Hunk.ID, Decision: decision, Note: note}})
	}
	return reqs
}

// Failed takes back a decision whose command failed and says what to tell
// the person. When someone else decided first (conflict, or the ask is no
// longer open) the prompt stays closed; otherwise it is offered again.
func (p *Prompter) Failed(req Request, err error) string {
	match := func(q *Prompt) bool {
		if q.Session != req.Session {
			return false
		}
		switch c := req.Cmd.(type) {
		case command.Answer:
			return q.IsAsk() && q.Ask.AskID == c.AskID
		case command.DecideHunk:
			return !q.IsAsk() && q.EditID == c.EditID && q.Hunk.ID == c.HunkID
		}
		return false
	}
	name := requestName(req)
	if errors.Is(err, wire.ErrConflict) || errors.Is(err, wire.ErrNotFound) {
		return fmt.Sprintf("%s was already decided elsewhere (%s)", name, oneLine(err))
	}
	for _, q := range p.pending {
		if match(q) {
			q.sent = false
		}
	}
	return fmt.Sprintf("%s: %s; it is offered again", name, oneLine(err))
}

// requestName names what a decision command decides.
func requestName(req Request) string {
	switch c := req.Cmd.(type) {
	case command.Answer:
		return "ask " + clean(c.AskID)
	case command.DecideHunk:
		return "hunk " + clean(c.EditID) + "/" + clean(c.HunkID)
	}
	return clean(string(req.Cmd.Cmd()))
}

// oneLine is an error's first line, safe to print.
func oneLine(err error) string {
	return firstLine(err.Error())
}
