package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The typed views of frames: each decodes the part of a frame the adapter
// reads, leaving the rest alone, so fields the CLI adds do not matter.

// controlRequest is what the CLI asks of the host.
type controlRequest struct {
	Subtype string `json:"subtype"`

	// Input is the tool's input (can_use_tool) or the hook's input
	// (hook_callback).
	Input json.RawMessage `json:"input"`

	// can_use_tool
	ToolName       string `json:"tool_name"`
	ToolUseID      string `json:"tool_use_id"`
	DecisionReason string `json:"decision_reason"`
	Description    string `json:"description"`

	// hook_callback
	CallbackID string    `json:"callback_id"`
	HookInput  hookInput `json:"-"`
}

// hookInput is the input of a hook_callback.
type hookInput struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
	DurationMS    *int64          `json:"duration_ms"`
}

func (f *frame) controlRequest() (controlRequest, error) {
	var r controlRequest
	if err := json.Unmarshal(f.Request, &r); err != nil {
		return r, fmt.Errorf("control request %s: %w", f.RequestID, err)
	}
	if r.Subtype == "hook_callback" && len(r.Input) > 0 {
		if err := json.Unmarshal(r.Input, &r.HookInput); err != nil {
			return r, fmt.Errorf("hook callback %s input: %w", f.RequestID, err)
		}
	}
	return r, nil
}

// controlReply is the CLI's answer to a request the host sent.
type controlReply struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

func (f *frame) controlReply() (controlReply, error) {
	var r controlReply
	if err := json.Unmarshal(f.Response, &r); err != nil {
		return r, fmt.Errorf("control response: %w", err)
	}
	return r, nil
}

// contentBlock is one block of an assistant or user message.
type contentBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// message is the message of an assistant or user frame.
type message struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

// blocks returns the message's content blocks; a plain string content is
// one text block.
func (m message) blocks() ([]contentBlock, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return nil, nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, err
		}
		return []contentBlock{{Type: "text", Text: s}}, nil
	}
	var bs []contentBlock
	if err := json.Unmarshal(c, &bs); err != nil {
		return nil, err
	}
	return bs, nil
}

// assistantFrame is an assistant frame: one content block of a model
// message, or a synthetic message reporting an API error.
type assistantFrame struct {
	Message        message `json:"message"`
	Error          string  `json:"error"`
	IsAPIError     bool    `json:"is_api_error_message"`
	APIErrorStatus *int    `json:"api_error_status"`
}

func (f *frame) assistant() (assistantFrame, []contentBlock, error) {
	var a assistantFrame
	if err := json.Unmarshal(f.raw, &a); err != nil {
		return a, nil, fmt.Errorf("assistant frame: %w", err)
	}
	bs, err := a.Message.blocks()
	if err != nil {
		return a, nil, fmt.Errorf("assistant frame content: %w", err)
	}
	return a, bs, nil
}

// toolResultMeta is the CLI's note on how a tool call was settled.
type toolResultMeta struct {
	ID               string `json:"id"`
	NonExecutionKind string `json:"non_execution_kind"`
}

// userFrame is a user frame: tool results, interruption markers, replays.
type userFrame struct {
	Message        message          `json:"message"`
	ToolResultMeta []toolResultMeta `json:"tool_result_meta"`
}

func (f *frame) user() (userFrame, []contentBlock, error) {
	var u userFrame
	if err := json.Unmarshal(f.raw, &u); err != nil {
		return u, nil, fmt.Errorf("user frame: %w", err)
	}
	bs, err := u.Message.blocks()
	if err != nil {
		return u, nil, fmt.Errorf("user frame content: %w", err)
	}
	return u, bs, nil
}

// apiUsage is the token accounting of the Messages API.
type apiUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

// streamEvent is a raw Messages API stream event the CLI passes through.
type streamEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID    string   `json:"id"`
		Model string   `json:"model"`
		Usage apiUsage `json:"usage"`
	} `json:"message"`
	Delta *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
	Usage *apiUsage `json:"usage"`
}

func (f *frame) streamEvent() (streamEvent, error) {
	var e streamEvent
	if err := json.Unmarshal(f.Event, &e); err != nil {
		return e, fmt.Errorf("stream event: %w", err)
	}
	return e, nil
}

// systemFrame holds the fields of the system subtypes the adapter uses.
type systemFrame struct {
	// init
	Model string `json:"model"`
	// api_retry
	Attempt      int    `json:"attempt"`
	MaxRetries   int    `json:"max_retries"`
	RetryDelayMS int64  `json:"retry_delay_ms"`
	ErrorStatus  *int   `json:"error_status"`
	Error        string `json:"error"`
	// status (compaction)
	CompactResult string `json:"compact_result"`
	CompactError  string `json:"compact_error"`
	// compact_boundary
	CompactMetadata *struct {
		PreTokens  int64 `json:"pre_tokens"`
		PostTokens int64 `json:"post_tokens"`
	} `json:"compact_metadata"`
}

func (f *frame) system() (systemFrame, error) {
	var s systemFrame
	if err := json.Unmarshal(f.raw, &s); err != nil {
		return s, fmt.Errorf("system/%s frame: %w", f.Subtype, err)
	}
	return s, nil
}

// modelUsage is the CLI's per-model accounting in a result.
type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
}

// resultFrame ends a turn.
type resultFrame struct {
	Subtype        string                `json:"subtype"`
	IsError        bool                  `json:"is_error"`
	Result         string                `json:"result"`
	SessionID      string                `json:"session_id"`
	TotalCostUSD   *float64              `json:"total_cost_usd"`
	Usage          apiUsage              `json:"usage"`
	ModelUsage     map[string]modelUsage `json:"modelUsage"`
	SinceLast      map[string]modelUsage `json:"model_usage_since_last_result"`
	NumTurns       int                   `json:"num_turns"`
	TerminalReason string                `json:"terminal_reason"`
	APIErrorStatus *int                  `json:"api_error_status"`
	APIErrorType   string                `json:"api_error_type"`
	Errors         []string              `json:"errors"`
}

func (f *frame) result() (resultFrame, error) {
	var r resultFrame
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return r, fmt.Errorf("result frame: %w", err)
	}
	return r, nil
}

// textOf flattens a tool_result's content: a string, or text blocks.
func textOf(content json.RawMessage) string {
	c := bytes.TrimSpace(content)
	if len(c) == 0 {
		return ""
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) == nil {
			return s
		}
		return ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(bl.Text)
	}
	return b.String()
}
