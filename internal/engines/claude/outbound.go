package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Hook callback ids the adapter registers in initialize.
const (
	hookPreToolUse         = "corral_pre_tool_use"
	hookPostToolUse        = "corral_post_tool_use"
	hookPostToolUseFailure = "corral_post_tool_use_failure"
)

// askReason is what the CLI records as the reason it asked the host.
const askReason = "Corral's permission gate decides every tool call"

// outFrame is any frame the adapter writes.
type outFrame interface{ frameKind() string }

type controlRequestOut struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

func (f controlRequestOut) frameKind() string { return f.Type }

type controlResponseOut struct {
	Type     string       `json:"type"`
	Response responseBody `json:"response"`
}

func (f controlResponseOut) frameKind() string { return f.Type }

type responseBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

type userMessageOut struct {
	Type            string      `json:"type"`
	SessionID       string      `json:"session_id"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
}

func (f userMessageOut) frameKind() string { return f.Type }

type userMessage struct {
	Role    string      `json:"role"`
	Content []textBlock `json:"content"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Requests the host sends.

type hookMatcher struct {
	Matcher         string   `json:"matcher,omitempty"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
}

type initializeRequest struct {
	Subtype string                   `json:"subtype"`
	Hooks   map[string][]hookMatcher `json:"hooks"`
}

// newInitialize registers the adapter's hooks for every tool: PreToolUse to
// put the gate first, PostToolUse and PostToolUseFailure to deliver steers
// at tool boundaries. No systemPrompt is sent, so the CLI keeps Claude Code's
// own system prompt.
func newInitialize() initializeRequest {
	return initializeRequest{
		Subtype: "initialize",
		Hooks: map[string][]hookMatcher{
			"PreToolUse":         {{HookCallbackIDs: []string{hookPreToolUse}}},
			"PostToolUse":        {{HookCallbackIDs: []string{hookPostToolUse}}},
			"PostToolUseFailure": {{HookCallbackIDs: []string{hookPostToolUseFailure}}},
		},
	}
}

type simpleRequest struct {
	Subtype string `json:"subtype"`
}

// contextUsageRequest asks for the context window's breakdown; "summary"
// answers from local estimates, without a model or token-count call.
type contextUsageRequest struct {
	Subtype string `json:"subtype"` // get_context_usage
	Detail  string `json:"detail"`
}

func newUserMessage(text string) userMessageOut {
	return userMessageOut{
		Type:    "user",
		Message: userMessage{Role: "user", Content: []textBlock{{Type: "text", Text: text}}},
	}
}

func successResponse(requestID string, response any) controlResponseOut {
	return controlResponseOut{Type: typeControlResponse, Response: responseBody{Subtype: "success", RequestID: requestID, Response: response}}
}

func errorResponse(requestID, msg string) controlResponseOut {
	return controlResponseOut{Type: typeControlResponse, Response: responseBody{Subtype: "error", RequestID: requestID, Error: msg}}
}

// Answers to the CLI's requests.

type hookOutput struct {
	HookSpecificOutput hookSpecificOutput `json:"hookSpecificOutput"`
}

type hookSpecificOutput struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	AdditionalContext        string `json:"additionalContext,omitempty"`
}

// askEveryTool is the PreToolUse answer that makes the CLI ask the host
// about the call, whatever its own rules and settings say.
func askEveryTool() hookOutput {
	return hookOutput{HookSpecificOutput: hookSpecificOutput{
		HookEventName:            "PreToolUse",
		PermissionDecision:       "ask",
		PermissionDecisionReason: askReason,
	}}
}

type permissionAllow struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput"`
	ToolUseID    string          `json:"toolUseID,omitempty"`
}

type permissionDeny struct {
	Behavior  string `json:"behavior"`
	Message   string `json:"message"`
	ToolUseID string `json:"toolUseID,omitempty"`
}

// encodeFrame renders f as exactly one line of JSON, newline included. The
// CLI exits on a malformed line, so nothing else is ever written.
func encodeFrame(f outFrame) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("encode %s frame: %w", f.frameKind(), err)
	}
	line := buf.Bytes()
	// json.Encoder escapes control characters inside strings and writes
	// exactly one trailing newline; check, because one stray byte kills the
	// CLI.
	if bytes.IndexByte(line[:len(line)-1], '\n') >= 0 || !json.Valid(line) {
		return nil, fmt.Errorf("encode %s frame: not a single JSON line", f.frameKind())
	}
	return line, nil
}
