package wire

import "encoding/json"

// Cmd names a control command.
type Cmd string

// Control commands. The same JSON is accepted on control.sock, by the
// supervisor's HTTP API and inside an inject message.
const (
	CmdSend         Cmd = "send"         // Text: queued while a turn runs
	CmdSteer        Cmd = "steer"        // Text: delivered at the next tool boundary
	CmdStop         Cmd = "stop"         // interrupt the turn, deny open asks, clear the queue
	CmdAnswer       Cmd = "answer"       // AskID, Decision allow|deny, Note
	CmdStatus       Cmd = "status"       // the session's Status
	CmdDecideHunk   Cmd = "decideHunk"   // EditID, HunkID, Decision accept|reject, Note
	CmdSetMode      Cmd = "setMode"      // Mode review|auto|readonly
	CmdSetGoal      Cmd = "setGoal"      // Goal
	CmdGetGoal      Cmd = "getGoal"      //
	CmdClearGoal    Cmd = "clearGoal"    //
	CmdMarkGoalDone Cmd = "markGoalDone" //
	CmdSetSpendCap  Cmd = "setSpendCap"  // SpendCapUSD
	CmdForkSession  Cmd = "forkSession"  // the session continues under a new id
	CmdCancelQueued Cmd = "cancelQueued" // MessageID: remove a queued send
)

// Decisions carried by answer and decideHunk.
const (
	DecisionAllow  = "allow"
	DecisionDeny   = "deny"
	DecisionAccept = "accept"
	DecisionReject = "reject"
)

// Command is one control command.
type Command struct {
	Cmd         Cmd      `json:"cmd"`
	Text        string   `json:"text,omitempty"`
	AskID       string   `json:"askId,omitempty"`
	Decision    string   `json:"decision,omitempty"`
	Note        string   `json:"note,omitempty"`
	EditID      string   `json:"editId,omitempty"`
	HunkID      string   `json:"hunkId,omitempty"`
	Mode        string   `json:"mode,omitempty"`
	Goal        string   `json:"goal,omitempty"`
	SpendCapUSD *float64 `json:"spendCapUsd,omitempty"`
	MessageID   string   `json:"messageId,omitempty"`
}

// Reply answers one command: {"ok":true,"result":...} or
// {"ok":false,"error":{...}}.
type Reply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// OKReply builds a successful reply; result may be nil.
func OKReply(result any) *Reply {
	if result == nil {
		return &Reply{OK: true}
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return ErrReply(Errorf(CodeInternal, "encode result: %v", err))
	}
	return &Reply{OK: true, Result: raw}
}

// ErrReply builds a failed reply from any error.
func ErrReply(err error) *Reply { return &Reply{Error: ToError(err)} }

// Err returns the reply's error, or nil when it succeeded.
func (r *Reply) Err() error {
	if r.OK {
		return nil
	}
	if r.Error == nil {
		return Errorf(CodeInternal, "reply without ok or error")
	}
	return r.Error
}

// State is a session's coarse state, as a status bar shows it.
type State string

// Session states.
const (
	StateStarting           State = "starting"
	StateIdle               State = "idle"
	StateWorking            State = "working"
	StateWaitingForApproval State = "waitingForApproval"
	StateWaitingForReview   State = "waitingForReview"
	StateFailed             State = "failed"
	StateStopped            State = "stopped"
)
