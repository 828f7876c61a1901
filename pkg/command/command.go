package command

import (
	"github.com/corral-dev/corral/pkg/event"
)

// Name is a command's name, its "cmd".
type Name string

// Request is a control command: a value of one of this package's command
// types. On every transport it is one flat JSON object whose "cmd" is
// Cmd() and whose other fields are the type's own (Marshal, Decode):
//
//	{"cmd":"send","text":"add a README"}
type Request interface {
	Cmd() Name
}

// Call is a command whose result is R. Every command is one: the runner's
// handler for it returns an R, and a Go caller gets one back (see
// Registry for the list).
type Call[R any] interface {
	Request
	result(R)
}

// Decisions carried by answer and decideHunk, and recorded by their events.
const (
	DecisionAllow  = "allow"
	DecisionDeny   = "deny"
	DecisionAccept = "accept"
	DecisionReject = "reject"
)

// Send queues a message; it starts when the running turn (and earlier
// messages) end. Its result is the message queued.
type Send struct {
	Text string `json:"text"`
}

// Steer hands text to the running turn at its next tool boundary (a send
// when no turn runs).
type Steer struct {
	Text string `json:"text"`
}

// SteerResult is the result of steer: how the steer was taken.
type SteerResult struct {
	// Delivery is "native" (handed to the engine at once), "boundary"
	// (waiting for the next tool boundary) or "queued" (no turn was
	// running, so it became a send).
	Delivery string `json:"delivery"`
	// MessageID is set when the steer was queued as a send.
	MessageID string `json:"messageId,omitempty"`
}

// Stop interrupts the turn, denies open asks, rejects pending hunks,
// clears the queue and halts a timed loop. Its result is the receipt of
// what was cancelled, the data of the stopped event.
type Stop struct{}

// Answer answers an open ask.
type Answer struct {
	AskID    string `json:"askId"`
	Decision string `json:"decision"` // DecisionAllow or DecisionDeny
	Note     string `json:"note,omitempty"`
}

// AnswerResult is the result of answer: the answer recorded.
type AnswerResult struct {
	AskID    string `json:"askId"`
	Decision string `json:"decision"`
}

// DecideHunk accepts or rejects one hunk of a staged edit. HunkID may be
// EDIT/HUNK ("e3/h2"); EditID may be left out when one edit is pending.
// Its result is the data of the hunkDecided event.
type DecideHunk struct {
	EditID   string `json:"editId,omitempty"`
	HunkID   string `json:"hunkId"`
	Decision string `json:"decision"` // DecisionAccept or DecisionReject
	Note     string `json:"note,omitempty"`
}

// GetStatus asks for the session's Status. It works before the session is
// live.
type GetStatus struct{}

// SetMode sets the gate's mode from the next tool call on. Its result is
// the data of the modeChanged event.
type SetMode struct {
	Mode string `json:"mode"` // review, auto or readonly
}

// SetGoal sets the goal checked at every turn end. Its result is the data
// of the goalSet event.
type SetGoal struct {
	Goal string `json:"goal"`
}

// GetGoal asks for the goal and how its checks went.
type GetGoal struct{}

// GoalState is the result of getGoal.
type GoalState struct {
	// Goal is the goal's text; empty without a goal.
	Goal    string   `json:"goal,omitempty"`
	Clauses []string `json:"clauses"`
	// Done is set once the goal was marked done (markGoalDone).
	Done bool `json:"done"`
	// Attempts counts goal checks in a row since the last human message.
	Attempts int `json:"attempts"`
	// Limit is how many goal checks in a row may run (goalLimit).
	Limit int `json:"limit"`
}

// ClearGoal removes the goal.
type ClearGoal struct{}

// ClearGoalResult is the result of clearGoal.
type ClearGoalResult struct {
	Cleared bool `json:"cleared"`
}

// MarkGoalDone ends goal checks on a person's word. Its result is the data
// of the goalCheck event it records.
type MarkGoalDone struct{}

// SetSpendCap bounds what the session spends; 0 removes the cap. Its
// result is the data of the spendCapSet event.
type SetSpendCap struct {
	SpendCapUSD *float64 `json:"spendCapUsd"`
}

// CancelQueued removes a message that has not started. Its result is the
// message removed.
type CancelQueued struct {
	MessageID string `json:"messageId"`
}

// ForkSession branches the conversation: the session continues under a
// new id.
type ForkSession struct{}

// ForkResult is the result of forkSession: the session continues as To;
// From is left closed at the branch point.
type ForkResult struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Rename gives the session a title, shown in its status and kept in its
// meta.json: one line of at most wire.MaxTitle characters.
type Rename struct {
	Title string `json:"title"`
}

// RenameResult is the title now in force.
type RenameResult struct {
	Title string `json:"title"`
}

func (Send) Cmd() Name         { return "send" }
func (Steer) Cmd() Name        { return "steer" }
func (Stop) Cmd() Name         { return "stop" }
func (Answer) Cmd() Name       { return "answer" }
func (DecideHunk) Cmd() Name   { return "decideHunk" }
func (GetStatus) Cmd() Name    { return "status" }
func (SetMode) Cmd() Name      { return "setMode" }
func (SetGoal) Cmd() Name      { return "setGoal" }
func (GetGoal) Cmd() Name      { return "getGoal" }
func (ClearGoal) Cmd() Name    { return "clearGoal" }
func (MarkGoalDone) Cmd() Name { return "markGoalDone" }
func (SetSpendCap) Cmd() Name  { return "setSpendCap" }
func (CancelQueued) Cmd() Name { return "cancelQueued" }
func (ForkSession) Cmd() Name  { return "forkSession" }
func (Rename) Cmd() Name       { return "rename" }

func (Send) result(event.Queued)                 {}
func (Steer) result(SteerResult)                 {}
func (Stop) result(event.StoppedData)            {}
func (Answer) result(AnswerResult)               {}
func (DecideHunk) result(event.HunkDecidedData)  {}
func (GetStatus) result(Status)                  {}
func (SetMode) result(event.ModeChangedData)     {}
func (SetGoal) result(event.GoalSetData)         {}
func (GetGoal) result(GoalState)                 {}
func (ClearGoal) result(ClearGoalResult)         {}
func (MarkGoalDone) result(event.GoalCheckData)  {}
func (SetSpendCap) result(event.SpendCapSetData) {}
func (CancelQueued) result(event.Queued)         {}
func (ForkSession) result(ForkResult)            {}
func (Rename) result(RenameResult)               {}

// Registry lists every command: a command's type and its result's, in the
// order docs/commands.md lists them. Adding a command is a type above, its
// Cmd and result methods, and a line here.
var Registry = []Info{
	entry[Send](),
	entry[Steer](),
	entry[Stop](),
	entry[Answer](),
	entry[DecideHunk](),
	entry[GetStatus](),
	entry[SetMode](),
	entry[SetGoal](),
	entry[GetGoal](),
	entry[ClearGoal](),
	entry[MarkGoalDone](),
	entry[SetSpendCap](),
	entry[CancelQueued](),
	entry[ForkSession](),
	entry[Rename](),
}
