package codex

import "encoding/json"

// The app-server methods this package uses (codex-cli 0.169).
const (
	mInitialize        = "initialize"
	mInitialized       = "initialized"
	mThreadStart       = "thread/start"
	mThreadResume      = "thread/resume"
	mThreadFork        = "thread/fork"
	mThreadUnsubscribe = "thread/unsubscribe"
	mThreadCompact     = "thread/compact/start"
	mTurnStart         = "turn/start"
	mTurnSteer         = "turn/steer"
	mTurnInterrupt     = "turn/interrupt"

	nConfigWarning        = "configWarning"
	nError                = "error"
	nTurnStarted          = "turn/started"
	nTurnCompleted        = "turn/completed"
	nItemStarted          = "item/started"
	nItemCompleted        = "item/completed"
	nAgentMessageDelta    = "item/agentMessage/delta"
	nFileChangePatch      = "item/fileChange/patchUpdated"
	nTokenUsage           = "thread/tokenUsage/updated"
	nServerRequestSettled = "serverRequest/resolved"

	rCommandApproval    = "item/commandExecution/requestApproval"
	rFileChangeApproval = "item/fileChange/requestApproval"
	rPermissions        = "item/permissions/requestApproval"
	rUserInput          = "item/tool/requestUserInput"
	rElicitation        = "mcpServer/elicitation/request"
)

// Policy values Corral always runs with; see docs/engines-codex.md.
const (
	approvalOnRequest = "on-request"
	sandboxReadOnly   = "read-only"
	sandboxTypeRO     = "readOnly"
	reviewerUser      = "user"
)

type clientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

type initializeCapabilities struct {
	ExperimentalAPI           bool     `json:"experimentalApi"`
	RequestAttestation        bool     `json:"requestAttestation"`
	OptOutNotificationMethods []string `json:"optOutNotificationMethods,omitempty"`
}

type initializeParams struct {
	ClientInfo   clientInfo             `json:"clientInfo"`
	Capabilities initializeCapabilities `json:"capabilities"`
}

type initializeResult struct {
	UserAgent string `json:"userAgent"`
	CodexHome string `json:"codexHome"`
}

// threadParams are the settings thread/start, thread/resume and thread/fork
// share. Corral restates the policy on every call rather than trusting the
// config file alone.
type threadParams struct {
	ThreadID              string `json:"threadId,omitempty"`
	Cwd                   string `json:"cwd,omitempty"`
	Model                 string `json:"model,omitempty"`
	ApprovalPolicy        string `json:"approvalPolicy"`
	ApprovalsReviewer     string `json:"approvalsReviewer"`
	Sandbox               string `json:"sandbox"`
	DeveloperInstructions string `json:"developerInstructions,omitempty"`
	Ephemeral             bool   `json:"ephemeral,omitempty"`
	ExcludeTurns          bool   `json:"excludeTurns,omitempty"`
}

type sandboxPolicy struct {
	Type          string `json:"type"`
	NetworkAccess any    `json:"networkAccess"`
}

// threadResult is the common part of the thread/start, thread/resume and
// thread/fork responses.
type threadResult struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	Model             string          `json:"model"`
	ModelProvider     string          `json:"modelProvider"`
	ApprovalPolicy    json.RawMessage `json:"approvalPolicy"`
	ApprovalsReviewer string          `json:"approvalsReviewer"`
	Sandbox           sandboxPolicy   `json:"sandbox"`
}

type userInput struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	TextElements []any  `json:"text_elements"`
}

func textInput(text string) []userInput {
	return []userInput{{Type: "text", Text: text, TextElements: []any{}}}
}

type turnStartParams struct {
	ThreadID string      `json:"threadId"`
	Input    []userInput `json:"input"`
}

type turnSteerParams struct {
	ThreadID       string      `json:"threadId"`
	ExpectedTurnID string      `json:"expectedTurnId"`
	Input          []userInput `json:"input"`
}

type turnRef struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

type threadRef struct {
	ThreadID string `json:"threadId"`
}

type turnResult struct {
	Turn turnInfo `json:"turn"`
}

type turnInfo struct {
	ID     string       `json:"id"`
	Status string       `json:"status"` // completed, interrupted, failed, inProgress
	Error  *turnError   `json:"error"`
	Items  []threadItem `json:"items"`
}

// turnError is how the server describes a failed model call.
// CodexErrorInfo is a string ("unauthorized") or a one-key object
// ({"httpConnectionFailed": {"httpStatusCode": 401}}).
type turnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"`
	AdditionalDetails *string         `json:"additionalDetails"`
}

type turnNotification struct {
	ThreadID string   `json:"threadId"`
	Turn     turnInfo `json:"turn"`
}

type errorNotification struct {
	Error     turnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
	ThreadID  string    `json:"threadId"`
	TurnID    string    `json:"turnId"`
}

type configWarning struct {
	Summary string  `json:"summary"`
	Details *string `json:"details"`
}

// threadItem holds the fields of the item variants Corral maps; the rest
// of each variant is ignored.
type threadItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`

	Text string `json:"text"` // agentMessage

	// commandExecution
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	Status           string          `json:"status"`
	CommandActions   []commandAction `json:"commandActions"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	DurationMS       *int64          `json:"durationMs"`

	Changes []fileUpdateChange `json:"changes"` // fileChange

	// mcpToolCall and dynamicToolCall
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Error     json.RawMessage `json:"error"`

	Query string `json:"query"` // webSearch
	Path  string `json:"path"`  // imageView
}

type commandAction struct {
	Type    string `json:"type"`
	Command string `json:"command"`
}

type fileUpdateChange struct {
	Path string          `json:"path"`
	Kind patchChangeKind `json:"kind"`
	Diff string          `json:"diff"`
}

type patchChangeKind struct {
	Type     string  `json:"type"` // add, delete, update
	MovePath *string `json:"move_path"`
}

type itemNotification struct {
	Item     threadItem `json:"item"`
	ThreadID string     `json:"threadId"`
	TurnID   string     `json:"turnId"`
}

type deltaNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
}

type patchUpdatedNotification struct {
	ThreadID string             `json:"threadId"`
	TurnID   string             `json:"turnId"`
	ItemID   string             `json:"itemId"`
	Changes  []fileUpdateChange `json:"changes"`
}

type tokenBreakdown struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
}

type tokenUsageNotification struct {
	ThreadID   string `json:"threadId"`
	TurnID     string `json:"turnId"`
	TokenUsage struct {
		Total              tokenBreakdown `json:"total"`
		Last               tokenBreakdown `json:"last"`
		ModelContextWindow *int64         `json:"modelContextWindow"`
	} `json:"tokenUsage"`
}

type serverRequestResolved struct {
	ThreadID  string          `json:"threadId"`
	RequestID json.RawMessage `json:"requestId"`
}

type commandApprovalParams struct {
	Kind                   string          `json:"kind"` // command, humanCommand, writeStdin
	ThreadID               string          `json:"threadId"`
	TurnID                 string          `json:"turnId"`
	ItemID                 string          `json:"itemId"`
	ApprovalID             *string         `json:"approvalId"`
	Reason                 *string         `json:"reason"`
	NetworkApprovalContext *networkContext `json:"networkApprovalContext"`
	Command                *string         `json:"command"`
	Cwd                    *string         `json:"cwd"`
	CommandActions         []commandAction `json:"commandActions"`
}

type networkContext struct {
	Host     string `json:"host"`
	Protocol string `json:"protocol"`
}

type fileChangeApprovalParams struct {
	ThreadID  string  `json:"threadId"`
	TurnID    string  `json:"turnId"`
	ItemID    string  `json:"itemId"`
	Reason    *string `json:"reason"`
	GrantRoot *string `json:"grantRoot"`
}

type approvalDecision struct {
	Decision string `json:"decision"` // accept, decline, cancel
}

// permissionsGrant answers item/permissions/requestApproval granting
// nothing: extra permissions would let later commands bypass approval.
type permissionsGrant struct {
	Permissions struct{} `json:"permissions"`
	Scope       string   `json:"scope"`
}

type elicitationAnswer struct {
	Action  string `json:"action"`
	Content any    `json:"content"`
	Meta    any    `json:"_meta"`
}
