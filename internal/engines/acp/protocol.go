package acp

import "encoding/json"

// ProtocolVersion is the ACP version this client speaks. An agent that
// answers initialize with another version is refused.
const ProtocolVersion = 1

// Methods the agent serves.
const (
	mInitialize     = "initialize"
	mSessionNew     = "session/new"
	mSessionLoad    = "session/load"
	mSessionPrompt  = "session/prompt"
	mSessionCancel  = "session/cancel" // a notification
	nSessionUpdate  = "session/update" // the agent's notification
	rPermission     = "session/request_permission"
	rReadTextFile   = "fs/read_text_file"
	rWriteTextFile  = "fs/write_text_file"
	rTerminalCreate = "terminal/create"
	rTerminalOutput = "terminal/output"
	rTerminalWait   = "terminal/wait_for_exit"
	rTerminalKill   = "terminal/kill"
	rTerminalFree   = "terminal/release"
)

// ACP's own JSON-RPC error codes.
const (
	codeAuthRequired     = -32000
	codeResourceNotFound = -32002
)

type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         implementation     `json:"clientInfo"`
}

type clientCapabilities struct {
	FS       fsCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

type fsCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type initializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities agentCapabilities `json:"agentCapabilities"`
	AgentInfo         *implementation   `json:"agentInfo"`
	AuthMethods       []json.RawMessage `json:"authMethods"`
}

type agentCapabilities struct {
	LoadSession bool `json:"loadSession"`
}

type newSessionParams struct {
	Cwd        string            `json:"cwd"`
	MCPServers []json.RawMessage `json:"mcpServers"`
}

type newSessionResult struct {
	SessionID string `json:"sessionId"`
}

type loadSessionParams struct {
	SessionID  string            `json:"sessionId"`
	Cwd        string            `json:"cwd"`
	MCPServers []json.RawMessage `json:"mcpServers"`
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

type promptResult struct {
	StopReason string     `json:"stopReason"`
	Usage      *turnUsage `json:"usage"`
}

// Stop reasons.
const (
	stopEndTurn   = "end_turn"
	stopCancelled = "cancelled"
)

// turnUsage is the (unstable) token usage of a prompt turn.
type turnUsage struct {
	InputTokens       int64  `json:"inputTokens"`
	OutputTokens      int64  `json:"outputTokens"`
	CachedReadTokens  *int64 `json:"cachedReadTokens"`
	CachedWriteTokens *int64 `json:"cachedWriteTokens"`
}

type cancelParams struct {
	SessionID string `json:"sessionId"`
}

// sessionNotification is the params of session/update.
type sessionNotification struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

// update is one session update: which fields are set depends on its
// sessionUpdate discriminator.
type update struct {
	SessionUpdate string `json:"sessionUpdate"`

	// agent_message_chunk, agent_thought_chunk, user_message_chunk
	Content json.RawMessage `json:"content"`

	// tool_call, tool_call_update (content is also theirs)
	toolFields

	// plan
	Entries []planEntry `json:"entries"`

	// usage_update
	Used *int64 `json:"used"`
	Size *int64 `json:"size"`
	Cost *cost  `json:"cost"`
}

// toolFields are the fields of tool_call and tool_call_update, and of the
// tool call a permission request carries. Absent fields keep their value.
type toolFields struct {
	ToolCallID string             `json:"toolCallId"`
	Title      *string            `json:"title"`
	Kind       *string            `json:"kind"`
	Status     *string            `json:"status"`
	RawInput   json.RawMessage    `json:"rawInput"`
	RawOutput  json.RawMessage    `json:"rawOutput"`
	Locations  []toolCallLocation `json:"locations"`
	Meta       json.RawMessage    `json:"_meta"`
}

type toolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line"`
}

// toolCallContent is one item of a tool call's content.
type toolCallContent struct {
	Type       string          `json:"type"` // content, diff, terminal
	Content    json.RawMessage `json:"content"`
	Path       string          `json:"path"`
	TerminalID string          `json:"terminalId"`
}

type planEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

type cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// textContent is a text content block.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type permissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  toolFields         `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"` // allow_once, allow_always, reject_once, reject_always
}

type permissionResult struct {
	Outcome permissionOutcome `json:"outcome"`
}

type permissionOutcome struct {
	Outcome  string `json:"outcome"` // selected, cancelled
	OptionID string `json:"optionId,omitempty"`
}

type readTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line"`
	Limit     *int   `json:"limit"`
}

type readTextFileResult struct {
	Content string `json:"content"`
}

type writeTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

type createTerminalParams struct {
	SessionID       string        `json:"sessionId"`
	Command         string        `json:"command"`
	Args            []string      `json:"args"`
	Env             []envVariable `json:"env"`
	Cwd             *string       `json:"cwd"`
	OutputByteLimit *int64        `json:"outputByteLimit"`
}

type envVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type createTerminalResult struct {
	TerminalID string `json:"terminalId"`
}

type terminalParams struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

type exitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

type terminalOutputResult struct {
	Output     string      `json:"output"`
	Truncated  bool        `json:"truncated"`
	ExitStatus *exitStatus `json:"exitStatus,omitempty"`
}

// empty is the result of the client methods that return nothing.
type empty struct{}
