package fakemodel

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"
)

// anthropicMessage is a Messages API reply rebuilt from its stream the way
// the SDKs do it.
type anthropicMessage struct {
	ID         string
	Model      string
	Text       string
	TextDeltas int
	Tools      []anthropicToolUse
	StopReason string
	Usage      map[string]any // from message_delta
	StartUsage map[string]any // from message_start
}

type anthropicToolUse struct {
	ID, Name  string
	Input     string // the partial_json deltas joined
	Deltas    int
	BlockType string
}

func accumulateAnthropic(t *testing.T, events []event) anthropicMessage {
	t.Helper()
	var m anthropicMessage
	blocks := map[int]*anthropicToolUse{}
	for _, e := range events {
		d := e.json(t)
		if d["type"] != e.Name {
			t.Fatalf("event %q carries type %v", e.Name, d["type"])
		}
		switch e.Name {
		case "message_start":
			msg := d["message"].(map[string]any)
			m.ID, _ = msg["id"].(string)
			m.Model, _ = msg["model"].(string)
			m.StartUsage = msg["usage"].(map[string]any)
		case "content_block_start":
			index := int(d["index"].(float64))
			block := d["content_block"].(map[string]any)
			if block["type"] == "tool_use" {
				blocks[index] = &anthropicToolUse{ID: block["id"].(string), Name: block["name"].(string), BlockType: "tool_use"}
			}
		case "content_block_delta":
			index := int(d["index"].(float64))
			delta := d["delta"].(map[string]any)
			switch delta["type"] {
			case "text_delta":
				m.Text += delta["text"].(string)
				m.TextDeltas++
			case "input_json_delta":
				blocks[index].Input += delta["partial_json"].(string)
				blocks[index].Deltas++
			}
		case "content_block_stop":
			index := int(d["index"].(float64))
			if b := blocks[index]; b != nil {
				m.Tools = append(m.Tools, *b)
			}
		case "message_delta":
			m.StopReason = d["delta"].(map[string]any)["stop_reason"].(string)
			m.Usage = d["usage"].(map[string]any)
		}
	}
	return m
}

func TestAnthropicStreamCarriesTextToolCallsAndUsage(t *testing.T) {
	ctx := testContext(t)
	sc := Scenario{Steps: []Step{{
		Name:   "write",
		Text:   "I'll create the file.",
		Chunks: 3,
		Tools: ToolSet{Default: []ToolCall{
			{Name: "Write", Input: json.RawMessage(`{"file_path": "/w/hello.txt", "content": "hello\n"}`), Chunks: 4},
			{ID: "toolu_given", Name: "Bash", Input: json.RawMessage(`{"command":"cat hello.txt"}`)},
		}},
		Usage: &Usage{Input: 1200, Output: 34, CacheRead: 500, CacheCreation: 7},
	}}}
	_, url := startServer(t, sc)

	resp := post(ctx, t, url+"/v1/messages?beta=true", anthropicBody(true, "create hello.txt", "Write", "Bash"), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp.Body))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	if resp.Header.Get("Request-Id") == "" {
		t.Error("no request-id header")
	}
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatalf("read stream: %v", err)
	}
	wantNames := []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	}
	if got := eventNames(events); !slices.Equal(got, wantNames) {
		t.Fatalf("events\n got %v\nwant %v", got, wantNames)
	}
	m := accumulateAnthropic(t, events)
	if m.Text != "I'll create the file." || m.TextDeltas != 3 {
		t.Errorf("text %q in %d deltas", m.Text, m.TextDeltas)
	}
	if m.Model != "claude-test" {
		t.Errorf("model %q, want the request's", m.Model)
	}
	if len(m.Tools) != 2 {
		t.Fatalf("tools %+v", m.Tools)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(m.Tools[0].Input), &input); err != nil {
		t.Fatalf("reassembled input %q: %v", m.Tools[0].Input, err)
	}
	if want := map[string]any{"file_path": "/w/hello.txt", "content": "hello\n"}; !reflect.DeepEqual(input, want) || m.Tools[0].Name != "Write" || m.Tools[0].Deltas != 4 {
		t.Errorf("Write call %+v, input %v", m.Tools[0], input)
	}
	if m.Tools[1].ID != "toolu_given" || m.Tools[1].Name != "Bash" || m.Tools[1].Input != `{"command":"cat hello.txt"}` {
		t.Errorf("Bash call %+v", m.Tools[1])
	}
	if m.Tools[0].ID == m.Tools[1].ID {
		t.Error("tool ids repeat")
	}
	if m.StopReason != "tool_use" {
		t.Errorf("stop reason %q", m.StopReason)
	}
	wantUsage := map[string]any{"input_tokens": 1200.0, "output_tokens": 34.0, "cache_read_input_tokens": 500.0, "cache_creation_input_tokens": 7.0}
	if !reflect.DeepEqual(m.Usage, wantUsage) {
		t.Errorf("usage %v, want %v", m.Usage, wantUsage)
	}
	if m.StartUsage["input_tokens"] != 1200.0 {
		t.Errorf("message_start usage %v", m.StartUsage)
	}
}

func TestAnthropicTextOnlyEndsTurn(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "Done."}}})
	resp := post(ctx, t, url+"/v1/messages", anthropicBody(true, "hi"), nil)
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := accumulateAnthropic(t, events)
	if m.Text != "Done." || m.StopReason != "end_turn" || len(m.Tools) != 0 {
		t.Errorf("got %+v", m)
	}
	if m.Usage["input_tokens"] != 100.0 || m.Usage["output_tokens"] != 10.0 {
		t.Errorf("default usage %v", m.Usage)
	}
}

func TestAnthropicNonStreamingReturnsMessage(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{
		Text:  "Here.",
		Tools: ToolSet{Default: []ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`)}}},
		Usage: &Usage{Input: 5, Output: 6},
	}}})
	resp := post(ctx, t, url+"/v1/messages", anthropicBody(false, "hi", "Read"), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	m := decodeJSON(t, readAll(t, resp.Body))
	content := m["content"].([]any)
	if len(content) != 2 {
		t.Fatalf("content %v", content)
	}
	text := content[0].(map[string]any)
	tool := content[1].(map[string]any)
	if text["text"] != "Here." || tool["type"] != "tool_use" || tool["name"] != "Read" {
		t.Errorf("content %v", content)
	}
	if !reflect.DeepEqual(tool["input"], map[string]any{"file_path": "/a"}) {
		t.Errorf("input %v", tool["input"])
	}
	if m["stop_reason"] != "tool_use" || m["type"] != "message" || m["role"] != "assistant" {
		t.Errorf("message %v", m)
	}
	if u := m["usage"].(map[string]any); u["input_tokens"] != 5.0 || u["output_tokens"] != 6.0 {
		t.Errorf("usage %v", u)
	}
}

func TestAnthropicErrorsUseTheAPIShape(t *testing.T) {
	tests := []struct {
		name       string
		reply      ErrorReply
		wantStatus int
		wantType   string
		wantHeader [2]string
	}{
		{"401 with retry switched off", ErrorReply{Status: 401, Headers: map[string]string{"x-should-retry": "false"}}, 401, "authentication_error", [2]string{"X-Should-Retry", "false"}},
		{"overloaded", ErrorReply{Status: 529}, 529, "overloaded_error", [2]string{}},
		{"server error", ErrorReply{Status: 500}, 500, "api_error", [2]string{}},
		{"rate limited with retry-after", ErrorReply{Status: 429, Headers: map[string]string{"retry-after": "1"}}, 429, "rate_limit_error", [2]string{"Retry-After", "1"}},
		{"explicit type", ErrorReply{Status: 400, Type: "invalid_request_error", Message: "prompt is too long"}, 400, "invalid_request_error", [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			_, url := startServer(t, Scenario{Steps: []Step{{Error: &tt.reply}}})
			resp := post(ctx, t, url+"/v1/messages", anthropicBody(true, "hi"), nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			body := decodeJSON(t, readAll(t, resp.Body))
			e := body["error"].(map[string]any)
			if body["type"] != "error" || e["type"] != tt.wantType || e["message"] == "" {
				t.Errorf("body %v", body)
			}
			if tt.reply.Message != "" && e["message"] != tt.reply.Message {
				t.Errorf("message %v", e["message"])
			}
			if h := tt.wantHeader; h[0] != "" && resp.Header.Get(h[0]) != h[1] {
				t.Errorf("header %s = %q, want %q", h[0], resp.Header.Get(h[0]), h[1])
			}
		})
	}
}

func TestErrorBodyGivenVerbatim(t *testing.T) {
	tests := []struct {
		name, body, wantBody, wantType string
	}{
		{"json object", `{"custom":true}`, `{"custom":true}`, "application/json"},
		{"string as text", `"upstream exploded"`, "upstream exploded", "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			_, url := startServer(t, Scenario{Steps: []Step{{Error: &ErrorReply{Status: 502, Body: json.RawMessage(tt.body)}}}})
			resp := post(ctx, t, url+"/v1/messages", anthropicBody(true, "hi"), nil)
			if got := string(readAll(t, resp.Body)); resp.StatusCode != 502 || got != tt.wantBody {
				t.Errorf("status %d body %q", resp.StatusCode, got)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tt.wantType {
				t.Errorf("content type %q", ct)
			}
		})
	}
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "partial answer", Chunks: 2, StreamError: &StreamError{AfterEvents: 4}}}})
	resp := post(ctx, t, url+"/v1/messages", anthropicBody(true, "hi"), nil)
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := eventNames(events), []string{"message_start", "ping", "content_block_start", "content_block_delta", "error"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	e := events[4].json(t)["error"].(map[string]any)
	if e["type"] != "overloaded_error" || e["message"] != "Overloaded" {
		t.Errorf("error event %v", e)
	}
}

func TestCountTokensAndModels(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x"}}, Models: []string{"m-one", "m-two"}})

	resp := post(ctx, t, url+"/v1/messages/count_tokens", anthropicBody(false, "count these characters please"), nil)
	if n := decodeJSON(t, readAll(t, resp.Body))["input_tokens"].(float64); n < 1 {
		t.Errorf("input_tokens %v", n)
	}

	for _, tt := range []struct {
		name    string
		headers map[string]string
		check   func(map[string]any) bool
	}{
		{"anthropic", map[string]string{"anthropic-version": "2023-06-01"}, func(m map[string]any) bool {
			d := m["data"].([]any)
			return len(d) == 2 && d[0].(map[string]any)["type"] == "model" && m["last_id"] == "m-two"
		}},
		{"openai", nil, func(m map[string]any) bool {
			d := m["data"].([]any)
			return len(d) == 2 && m["object"] == "list" && d[1].(map[string]any)["id"] == "m-two"
		}},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/models", nil)
		for k, v := range tt.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		m := decodeJSON(t, readAll(t, resp.Body))
		resp.Body.Close()
		if !tt.check(m) {
			t.Errorf("%s models: %v", tt.name, m)
		}
	}
	if s.Remaining() != 1 {
		t.Errorf("count_tokens or models consumed the script: %d left", s.Remaining())
	}
}
