package event

import (
	"encoding/json"
	"time"
)

// Event is one line of a session's events.jsonl and one SSE message.
// Seq starts at 1 and continues across restarts; it never repeats or skips.
type Event struct {
	Seq  int64           `json:"seq"`
	TS   time.Time       `json:"ts"`
	Type Type            `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Type names an event (EventType, in the published schema). docs/events.md
// lists each with its fields.
type Type string

// Event types.
const (
	SessionStarted Type = "sessionStarted"
	SessionResumed Type = "sessionResumed"
	UserMessage    Type = "userMessage"
	TurnStarted    Type = "turnStarted"
	AssistantDelta Type = "assistantDelta"
	AssistantText  Type = "assistantText"
	ToolStarted    Type = "toolStarted"
	ToolFinished   Type = "toolFinished"
	AskOpened      Type = "askOpened"
	AskAnswered    Type = "askAnswered"
	SteerDelivered Type = "steerDelivered"
	SteerRequeued  Type = "steerRequeued"
	TurnEnded      Type = "turnEnded"
	Stopped        Type = "stopped"
	Failure        Type = "failure"
	Usage          Type = "usage"
	Context        Type = "context"
	Retry          Type = "retry"
	HunkStaged     Type = "hunkStaged"
	HunkDecided    Type = "hunkDecided"
	EditApplied    Type = "editApplied"
	ModeChanged    Type = "modeChanged"
	GoalSet        Type = "goalSet"
	GoalCleared    Type = "goalCleared"
	GoalCheck      Type = "goalCheck"
	SpendCapSet    Type = "spendCapSet"
	Rotated        Type = "rotated"
	Compacted      Type = "compacted"
	QueueChanged   Type = "queueChanged"
	LogRepaired    Type = "logRepaired"
	Renamed        Type = "renamed"
)

// FailureCode is the stable code of a failure event.
type FailureCode string

// Failure codes.
const (
	FailEngineError           FailureCode = "engineError"
	FailPermissionUnavailable FailureCode = "permissionUnavailable"
	FailSignInExpired         FailureCode = "signInExpired"
	FailContextFull           FailureCode = "contextFull"
	FailSpendCap              FailureCode = "spendCap"
	FailStalled               FailureCode = "stalled"
	// FailStorage: the event log could not be written (a full disk) and
	// the session stopped until it could; written once it can be.
	FailStorage FailureCode = "storageFailed"
)

// SessionStartedData is the data of sessionStarted and sessionResumed.
type SessionStartedData struct {
	Engine        string `json:"engine"`
	Cwd           string `json:"cwd"`
	Mode          string `json:"mode"`
	Model         string `json:"model,omitempty"`
	EngineSession string `json:"engineSession,omitempty"`
	Parent        string `json:"parent,omitempty"`
	// ForkedFrom is the parent's engine conversation that this session's
	// conversation branches (an inherit by fork); a session that inherits
	// through a handoff brief has none.
	ForkedFrom string `json:"forkedFrom,omitempty"`
	Unattended bool   `json:"unattended,omitempty"`
}

// UserMessageData is the data of userMessage.
type UserMessageData struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Kind   string `json:"kind"` // send, goalCheck, loop, inherit
	Queued bool   `json:"queued"`
	// RequestID is the requestId of the send that queued the message, so
	// that a retry of it finds this message, also in a later runner.
	RequestID string `json:"requestId,omitempty"`
}

// TurnStartedData is the data of turnStarted.
type TurnStartedData struct {
	Turn      int    `json:"turn"`
	MessageID string `json:"messageId"`
	Text      string `json:"text"`
}

// TextData is the data of assistantDelta and assistantText.
type TextData struct {
	Text string `json:"text"`
}

// ToolStartedData is the data of toolStarted.
type ToolStartedData struct {
	ToolID  string `json:"toolId"`
	Tool    string `json:"tool"`
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	Command string `json:"command,omitempty"`
	Path    string `json:"path,omitempty"`
	URL     string `json:"url,omitempty"`
}

// ToolFinishedData is the data of toolFinished.
type ToolFinishedData struct {
	ToolID     string `json:"toolId"`
	Tool       string `json:"tool"`
	Outcome    string `json:"outcome"` // ok, error, denied, stopped
	DurationMS int64  `json:"durationMs"`
	ExitCode   *int   `json:"exitCode,omitempty"`
	Output     string `json:"output,omitempty"`
	Message    string `json:"message,omitempty"`
	// Gate is what the permission gate's rules made of the call, when the
	// engine asked Corral before running it.
	Gate *GateVerdict `json:"gate,omitempty"`
}

// GateVerdict is the gate's rule decision on a tool call (allow, ask or
// deny; a person's answer to an ask is askAnswered) and the call's
// category (shell, edit, read, network, web, mcp).
type GateVerdict struct {
	Decision string `json:"decision"`
	Category string `json:"category"`
}

// AskOpenedData is the data of askOpened.
type AskOpenedData struct {
	AskID    string          `json:"askId"`
	ToolID   string          `json:"toolId"`
	Tool     string          `json:"tool"`
	Category string          `json:"category"`
	Reason   string          `json:"reason"`
	Command  string          `json:"command,omitempty"`
	Path     string          `json:"path,omitempty"`
	URL      string          `json:"url,omitempty"`
	Parts    json.RawMessage `json:"parts,omitempty"`
}

// AskAnsweredData is the data of askAnswered. By is who answered: user,
// stop, unattended, or shutdown.
type AskAnsweredData struct {
	AskID    string `json:"askId"`
	Decision string `json:"decision"`
	Note     string `json:"note,omitempty"`
	By       string `json:"by"`
}

// SteerData is the data of steerDelivered and steerRequeued.
type SteerData struct {
	Text   string `json:"text"`
	ToolID string `json:"toolId,omitempty"`
	Native bool   `json:"native,omitempty"`
}

// UsageData is the data of usage events and the usage totals of a turn.
type UsageData struct {
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUSD          float64 `json:"costUsd"`
	Estimated        bool    `json:"estimated"`
	Model            string  `json:"model,omitempty"`
}

// Add accumulates u2 into u.
func (u *UsageData) Add(u2 UsageData) {
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.CacheReadTokens += u2.CacheReadTokens
	u.CacheWriteTokens += u2.CacheWriteTokens
	u.CostUSD += u2.CostUSD
	u.Estimated = u.Estimated || u2.Estimated
}

// ContextData is the data of context events.
type ContextData struct {
	UsedTokens   int64   `json:"usedTokens"`
	WindowTokens int64   `json:"windowTokens"`
	Percent      float64 `json:"percent"`
}

// TurnEndedData is the data of turnEnded.
type TurnEndedData struct {
	Turn       int       `json:"turn"`
	Outcome    string    `json:"outcome"` // done, stopped, failed
	DurationMS int64     `json:"durationMs"`
	Usage      UsageData `json:"usage"`
	Files      int       `json:"files"`
	Added      int       `json:"added"`
	Removed    int       `json:"removed"`
	Summary    string    `json:"summary,omitempty"`
}

// StoppedData is the data of stopped: what the stop cancelled.
type StoppedData struct {
	Reason          string `json:"reason"`
	InterruptedTurn bool   `json:"interruptedTurn"`
	DeniedAsks      int    `json:"deniedAsks"`
	RejectedHunks   int    `json:"rejectedHunks"`
	ClearedQueue    int    `json:"clearedQueue"`
}

// FailureData is the data of failure.
type FailureData struct {
	Code    FailureCode `json:"code"`
	Message string      `json:"message"`
	Action  string      `json:"action,omitempty"`
	Stderr  []string    `json:"stderr,omitempty"`
}

// RetryData is the data of retry: the engine is retrying a model call.
type RetryData struct {
	Attempt    int    `json:"attempt"`
	MaxRetries int    `json:"maxRetries,omitempty"`
	DelayMS    int64  `json:"delayMs"`
	Error      string `json:"error"`
}

// GoalClause is one clause of a goal with its verdict.
type GoalClause struct {
	Clause   string `json:"clause"`
	Met      bool   `json:"met"`
	Evidence string `json:"evidence"`
}

// GoalCheckData is the data of goalCheck.
type GoalCheckData struct {
	Goal    string       `json:"goal"`
	Clauses []GoalClause `json:"clauses"`
	Met     int          `json:"met"`
	Total   int          `json:"total"`
	Holds   bool         `json:"holds"`
	// Summary is what a shell prints: "holds · 2/2" or "unmet · 1/2".
	Summary string `json:"summary"`
	// Attempt counts goal checks in a row since the last human message.
	Attempt int `json:"attempt"`
	Limit   int `json:"limit"`
	// LimitReached is set when no further goal-check turn is queued
	// because Limit checks in a row found the goal unmet.
	LimitReached bool `json:"limitReached,omitempty"`
	// By is "judge" for a judged check, "user" for markGoalDone.
	By string `json:"by"`
}

// GoalSetData is the data of goalSet.
type GoalSetData struct {
	Goal    string   `json:"goal"`
	Clauses []string `json:"clauses"`
}

// RotatedData is the data of rotated: the conversation continues under a new
// session id.
type RotatedData struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"` // fork, clear
}

// LogRepairedData is the data of logRepaired: damaged lines of events.jsonl
// were moved aside when the log was opened.
type LogRepairedData struct {
	// File is the sibling file the damaged bytes were appended to, relative
	// to the session folder.
	File string `json:"file"`
	// Ranges are the byte ranges moved, as offsets in the log as it was
	// before the repair; at most the first 100 are listed.
	Ranges []DamagedRange `json:"ranges"`
	// RangeCount and Bytes count every range moved and their bytes.
	RangeCount int   `json:"rangeCount"`
	Bytes      int64 `json:"bytes"`
	// LastValidSeq is the highest seq kept; this event's seq follows it.
	LastValidSeq int64 `json:"lastValidSeq"`
}

// DamagedRange is one run of damaged bytes moved out of an event log.
type DamagedRange struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// Reason says why the bytes are not an event: "not JSON", "blank line",
	// "no seq", "seq out of order", "torn tail" (no final newline).
	Reason string `json:"reason"`
}

// RenamedData is the data of renamed: the session's new title.
type RenamedData struct {
	Title string `json:"title"`
}
