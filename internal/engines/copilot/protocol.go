package copilot

import "encoding/json"

// The slice of the CLI's JSON-RPC protocol (version 3) the adapter uses.
// Field names follow the CLI's schema; fields the adapter does not read are
// left out, so newer CLIs adding fields change nothing here.

// Protocol versions this adapter speaks.
const (
	minProtocolVersion = 3
	maxProtocolVersion = 3
)

// Methods the adapter calls.
const (
	methodConnect          = "connect"
	methodPing             = "ping"
	methodSessionCreate    = "session.create"
	methodSessionResume    = "session.resume"
	methodSessionSend      = "session.send"
	methodSessionAbort     = "session.abort"
	methodHandlePermission = "session.permissions.handlePendingPermissionRequest"
	methodRuntimeShutdown  = "runtime.shutdown"
)

// Notifications the adapter reads.
const notifySessionEvent = "session.event"

type connectResult struct {
	OK              bool   `json:"ok"`
	ProtocolVersion *int   `json:"protocolVersion"`
	Version         string `json:"version"`
}

type pingParams struct {
	Message string `json:"message"`
}

type pingResult struct {
	ProtocolVersion *int `json:"protocolVersion"`
}

// provider is a custom model provider ("bring your own key") for one
// session. In server mode the CLI takes it only here, per session; its
// COPILOT_PROVIDER_* environment is a start-up gate, not the provider.
type provider struct {
	Type    string `json:"type"`
	BaseURL string `json:"baseUrl"`
	APIKey  string `json:"apiKey,omitempty"`
	WireAPI string `json:"wireApi,omitempty"`
}

// sessionParams are the parameters of session.create and session.resume.
type sessionParams struct {
	SessionID         string    `json:"sessionId"`
	Model             string    `json:"model,omitempty"`
	Provider          *provider `json:"provider,omitempty"`
	WorkingDirectory  string    `json:"workingDirectory"`
	RequestPermission bool      `json:"requestPermission"`
	Streaming         bool      `json:"streaming"`
	// The adapter answers no user-input, elicitation, plan-mode or
	// hook requests; saying so makes the CLI never send them.
	RequestUserInput               bool   `json:"requestUserInput"`
	RequestElicitation             bool   `json:"requestElicitation"`
	RequestExitPlanMode            bool   `json:"requestExitPlanMode"`
	RequestAutoModeSwitch          bool   `json:"requestAutoModeSwitch"`
	Hooks                          bool   `json:"hooks"`
	IncludeSubAgentStreamingEvents bool   `json:"includeSubAgentStreamingEvents"`
	EnvValueMode                   string `json:"envValueMode"`
	// A session's agent preset: instructions appended to the CLI's system
	// message, and the only tools the model is offered.
	SystemMessage  *systemMessage `json:"systemMessage,omitempty"`
	AvailableTools []string       `json:"availableTools,omitempty"`
}

// systemMessage changes the CLI's system message; Corral only appends.
type systemMessage struct {
	Mode    string `json:"mode"` // append
	Content string `json:"content"`
}

type sessionResult struct {
	SessionID string `json:"sessionId"`
}

type sendParams struct {
	SessionID string `json:"sessionId"`
	Prompt    string `json:"prompt"`
	// Mode is "immediate" for a steer: delivered before the next model
	// request of the running turn.
	Mode string `json:"mode,omitempty"`
}

type sendResult struct {
	MessageID string `json:"messageId"`
}

type sessionIDParams struct {
	SessionID string `json:"sessionId"`
}

type permissionAnswer struct {
	SessionID string             `json:"sessionId"`
	RequestID string             `json:"requestId"`
	Result    permissionDecision `json:"result"`
}

// permissionDecision is "approve-once", or "reject" with feedback the model
// reads as "The user rejected this tool call. User feedback: ...".
type permissionDecision struct {
	Kind     string `json:"kind"`
	Feedback string `json:"feedback,omitempty"`
}

type permissionAnswerResult struct {
	Success bool `json:"success"`
}

// sessionEventParams is the payload of a session.event notification.
type sessionEventParams struct {
	SessionID string       `json:"sessionId"`
	Event     sessionEvent `json:"event"`
}

type sessionEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Session event types the adapter maps.
const (
	evUserMessage         = "user.message"
	evAssistantTurnStart  = "assistant.turn_start"
	evAssistantDelta      = "assistant.message_delta"
	evAssistantMessage    = "assistant.message"
	evAssistantUsage      = "assistant.usage"
	evAssistantTurnRetry  = "assistant.turn_retry"
	evToolStart           = "tool.execution_start"
	evToolComplete        = "tool.execution_complete"
	evPermissionRequested = "permission.requested"
	evPermissionCompleted = "permission.completed"
	evUsageInfo           = "session.usage_info"
	evSessionError        = "session.error"
	evSessionIdle         = "session.idle"
	evAbort               = "abort"
)

type userMessageData struct {
	MessageID string `json:"messageId"`
	Delivery  string `json:"delivery"`
}

type assistantDeltaData struct {
	DeltaContent     string `json:"deltaContent"`
	ParentToolCallID string `json:"parentToolCallId"`
}

type assistantMessageData struct {
	Content          string `json:"content"`
	ParentToolCallID string `json:"parentToolCallId"`
}

type assistantUsageData struct {
	Model            string `json:"model"`
	InputTokens      int64  `json:"inputTokens"`
	OutputTokens     int64  `json:"outputTokens"`
	CacheReadTokens  int64  `json:"cacheReadTokens"`
	CacheWriteTokens int64  `json:"cacheWriteTokens"`
}

type turnRetryData struct {
	Reason string `json:"reason"`
}

type toolStartData struct {
	ToolCallID    string          `json:"toolCallId"`
	ToolName      string          `json:"toolName"`
	Arguments     json.RawMessage `json:"arguments"`
	ToolTitle     string          `json:"toolTitle"`
	MCPServerName string          `json:"mcpServerName"`
	MCPToolName   string          `json:"mcpToolName"`
}

// toolArguments are the argument fields of the built-in tools that say
// what a call does.
type toolArguments struct {
	Command     string `json:"command"`
	Description string `json:"description"`
	Path        string `json:"path"`
	URL         string `json:"url"`
	Pattern     string `json:"pattern"`
}

type toolCompleteData struct {
	ToolCallID string `json:"toolCallId"`
	Success    bool   `json:"success"`
	Result     *struct {
		Content string `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	ShellExecution *struct {
		ExitCode *int `json:"exitCode"`
	} `json:"shellExecution"`
}

type permissionRequestedData struct {
	RequestID         string          `json:"requestId"`
	PermissionRequest json.RawMessage `json:"permissionRequest"`
}

// permissionRequest is the union of the permission kinds; Kind says which
// fields are set.
type permissionRequest struct {
	Kind       string `json:"kind"`
	ToolCallID string `json:"toolCallId"`
	Intention  string `json:"intention"`

	// shell
	FullCommandText string `json:"fullCommandText"`

	// write
	FileName        string          `json:"fileName"`
	NewFileContents *string         `json:"newFileContents"`
	FileEdits       []fileEditEntry `json:"fileEdits"`

	// read
	Path string `json:"path"`

	// url
	URL string `json:"url"`

	// mcp and custom-tool
	ServerName string `json:"serverName"`
	ToolName   string `json:"toolName"`
}

// fileEditEntry is one file of a write request as complete before and
// after texts; a missing side means the file is created or deleted.
type fileEditEntry struct {
	Before *fileContent `json:"before"`
	After  *fileContent `json:"after"`
}

type fileContent struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type permissionCompletedData struct {
	RequestID string `json:"requestId"`
}

type usageInfoData struct {
	TokenLimit    int64 `json:"tokenLimit"`
	CurrentTokens int64 `json:"currentTokens"`
}

type sessionErrorData struct {
	ErrorType  string `json:"errorType"`
	ErrorCode  string `json:"errorCode"`
	Message    string `json:"message"`
	StatusCode int    `json:"statusCode"`
}

type sessionIdleData struct {
	Aborted bool `json:"aborted"`
}
