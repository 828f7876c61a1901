package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// API names a wire format the server speaks.
type API string

// The wire formats. Match.API and the per-API tool lists use these names.
const (
	APIAnthropic API = "anthropic" // Anthropic Messages
	APIResponses API = "responses" // OpenAI Responses
	APIChat      API = "chat"      // OpenAI Chat Completions
)

// Scenario is what the server answers, read from a JSON file by
// [LoadScenario] or built in Go by a test.
type Scenario struct {
	// Name and Description are for people reading logs and files.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`

	// Auth, when set, makes every model request present the given key.
	Auth *Auth `json:"auth,omitempty"`

	// Match is the default predicate of every script step without its own.
	// {"hasTools": true} keeps tool-less side requests such as title
	// generation from consuming the script.
	Match *Match `json:"match,omitempty"`

	// Steps is the main script, consumed in order.
	Steps []Step `json:"steps"`

	// Side steps are tried before the script and are not consumed unless
	// they set Times. Each needs a Match.
	Side []Step `json:"side,omitempty"`

	// Fallback answers requests that neither a side step nor the head of
	// the script takes. The default is the text "done".
	Fallback *Step `json:"fallback,omitempty"`

	// Models lists the ids GET /v1/models returns. The default is one id,
	// "fake-model".
	Models []string `json:"models,omitempty"`

	// Vars are default values of ${name} placeholders in texts and tool
	// inputs; see docs/fakemodel.md.
	Vars map[string]string `json:"vars,omitempty"`
}

// Auth requires a credential on model requests: the x-api-key header or an
// "Authorization: Bearer" token equal to APIKey. Other requests get a 401 in
// the request's format, or Error when set.
type Auth struct {
	APIKey string      `json:"apiKey"`
	Error  *ErrorReply `json:"error,omitempty"`
}

// Step is one scripted answer. A step carries a reply (Text and/or Tools) or
// an Error; the stream controls (Delay, Hold, CutAfter, HangAfter,
// StreamError) shape how a reply is delivered.
type Step struct {
	// Name labels the step in the request log; Release and WaitHeld use it.
	Name string `json:"name,omitempty"`

	// Match restricts which requests the step answers.
	Match *Match `json:"match,omitempty"`

	// Text is the assistant text, streamed in Chunks pieces (default 1).
	Text   string `json:"text,omitempty"`
	Chunks int    `json:"chunks,omitempty"`

	// Tools are the tool calls the reply makes, after the text.
	Tools ToolSet `json:"tools,omitzero"`

	// Error answers with an HTTP error instead of a reply.
	Error *ErrorReply `json:"error,omitempty"`

	// Usage is reported with the reply; the default is 100 input and 10
	// output tokens.
	Usage *Usage `json:"usage,omitempty"`

	// Delay pauses before every event of a stream (before the body of a
	// non-streaming answer).
	Delay Duration `json:"delay,omitempty"`

	// Hold stops the answer after HoldAfter events until Server.Release is
	// called with the step's name, or the client goes away. With HoldAfter
	// 0 not even the status line is sent.
	Hold      bool `json:"hold,omitempty"`
	HoldAfter int  `json:"holdAfter,omitempty"`

	// CutAfter closes the connection abruptly after that many events (0:
	// right after the response headers). HangAfter stops sending after that
	// many events and keeps the connection open until the client goes away.
	CutAfter  *int `json:"cutAfter,omitempty"`
	HangAfter *int `json:"hangAfter,omitempty"`

	// StreamError ends the stream with an in-band error event.
	StreamError *StreamError `json:"streamError,omitempty"`

	// Times is how many requests the step answers (default 1 in the script,
	// unlimited for side steps); Always makes it answer every request.
	Times  int  `json:"times,omitempty"`
	Always bool `json:"always,omitempty"`
}

// Match is a predicate on a request. Every field that is set must hold.
type Match struct {
	// API is "anthropic", "responses" or "chat".
	API API `json:"api,omitempty"`
	// Path is the request path, e.g. "/v1/messages".
	Path string `json:"path,omitempty"`
	// Model is the request's model field.
	Model string `json:"model,omitempty"`
	// LastUserContains must occur in the newest user-written text (tool
	// results and system or developer messages are not user text).
	LastUserContains string `json:"lastUserContains,omitempty"`
	// Contains must occur anywhere in the conversation: system prompt,
	// messages, tool calls and tool results (not in tool definitions).
	Contains string `json:"contains,omitempty"`
	// ToolResultContains must occur in the newest tool result.
	ToolResultContains string `json:"toolResultContains,omitempty"`
	// HasTools requires the request to declare tools (true) or none (false).
	HasTools *bool `json:"hasTools,omitempty"`
	// HasTool requires the request to declare a tool of that name.
	HasTool string `json:"hasTool,omitempty"`
	// Headers maps header names to a substring their value must contain.
	Headers map[string]string `json:"headers,omitempty"`
}

// ToolCall is one tool call of a reply. Input is the call's JSON object
// (Anthropic input, OpenAI arguments); Freeform is the raw input of a
// Responses custom tool such as Codex's apply_patch. Exactly one is set.
type ToolCall struct {
	// ID overrides the generated call id.
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input,omitempty"`
	Freeform string          `json:"freeform,omitempty"`
	// Chunks is how many argument deltas the input is streamed in (default 1).
	Chunks int `json:"chunks,omitempty"`
}

// ToolSet holds a step's tool calls: one Default list for every API, or
// lists per API. For a request in format F the candidates are, in order, the
// F list, then OpenAI when F is responses or chat, then Default; the first
// candidate whose tool names the request declares is used, else the first
// candidate. That lets one step call Codex's apply_patch on the Responses API
// and Copilot's create on the same API.
//
// In JSON a plain array is the Default list.
type ToolSet struct {
	Default   []ToolCall `json:"default,omitempty"`
	Anthropic []ToolCall `json:"anthropic,omitempty"`
	OpenAI    []ToolCall `json:"openai,omitempty"`
	Responses []ToolCall `json:"responses,omitempty"`
	Chat      []ToolCall `json:"chat,omitempty"`
}

// IsZero reports whether the set has no tool calls at all.
func (t ToolSet) IsZero() bool {
	return len(t.Default)+len(t.Anthropic)+len(t.OpenAI)+len(t.Responses)+len(t.Chat) == 0
}

// UnmarshalJSON accepts an array (the Default list) or an object of lists.
func (t *ToolSet) UnmarshalJSON(data []byte) error {
	trimmed := bytes.TrimSpace(data)
	if bytes.Equal(trimmed, []byte("null")) {
		*t = ToolSet{}
		return nil
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var calls []ToolCall
		if err := strictUnmarshal(trimmed, &calls); err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		*t = ToolSet{Default: calls}
		return nil
	}
	type plain ToolSet // no methods: no recursion
	var p plain
	if err := strictUnmarshal(trimmed, &p); err != nil {
		return fmt.Errorf("tools: want an array of calls or an object of per-API arrays: %w", err)
	}
	*t = ToolSet(p)
	return nil
}

// MarshalJSON writes the array form when only Default is set.
func (t ToolSet) MarshalJSON() ([]byte, error) {
	if len(t.Anthropic)+len(t.OpenAI)+len(t.Responses)+len(t.Chat) == 0 {
		calls := t.Default
		if calls == nil {
			calls = []ToolCall{}
		}
		return json.Marshal(calls)
	}
	type plain ToolSet
	return json.Marshal(plain(t))
}

// candidates lists the tool-call lists that apply to api, most specific first.
func (t ToolSet) candidates(api API) [][]ToolCall {
	var out [][]ToolCall
	add := func(calls []ToolCall) {
		if len(calls) > 0 {
			out = append(out, calls)
		}
	}
	switch api {
	case APIAnthropic:
		add(t.Anthropic)
	case APIResponses:
		add(t.Responses)
		add(t.OpenAI)
	case APIChat:
		add(t.Chat)
		add(t.OpenAI)
	}
	add(t.Default)
	return out
}

// ErrorReply is an HTTP error answer. Without Body the server writes the
// error object of the request's format from Type and Message (defaults
// follow Status); a JSON object or array Body is sent as is, a JSON string
// Body is sent as plain text.
type ErrorReply struct {
	Status  int               `json:"status"`
	Type    string            `json:"type,omitempty"`
	Message string            `json:"message,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// StreamError ends a stream after AfterEvents events with the format's
// in-band error: an Anthropic "error" event, a Responses "response.failed"
// event, or a Chat Completions chunk holding an error object.
type StreamError struct {
	AfterEvents int    `json:"afterEvents"`
	Type        string `json:"type,omitempty"`
	Message     string `json:"message,omitempty"`
}

// Usage is the token accounting a reply reports. Each figure is passed
// through as is: Input is Anthropic input_tokens and OpenAI
// input_tokens/prompt_tokens, CacheRead is cache_read_input_tokens or
// cached_tokens, CacheCreation is Anthropic's cache_creation_input_tokens,
// Reasoning is OpenAI's reasoning_tokens.
type Usage struct {
	Input         int `json:"input"`
	Output        int `json:"output"`
	CacheRead     int `json:"cacheRead,omitempty"`
	CacheCreation int `json:"cacheCreation,omitempty"`
	Reasoning     int `json:"reasoning,omitempty"`
}

// Duration is a time.Duration written in JSON as a string such as "50ms".
type Duration time.Duration

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"50ms\", got %s", truncate(string(data), 40))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// strictUnmarshal decodes one JSON value, refusing unknown fields and
// trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
