package fakemodel

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// chatResult is a Chat Completions stream rebuilt the way the SDK stream
// helper does it, including its checks: role first, tool calls opened with
// id, type and name, a finish_reason before the end.
type chatResult struct {
	Role         string
	Text         string
	TextDeltas   int
	Calls        []chatCall
	FinishReason string
	Usage        map[string]any
	Done         bool
}

type chatCall struct {
	ID, Name, Arguments string
	Deltas              int
}

func accumulateChat(t *testing.T, events []event) chatResult {
	t.Helper()
	var r chatResult
	for i, e := range events {
		if e.Name != "" {
			t.Fatalf("chat event %d is named %q", i, e.Name)
		}
		if e.Data == "[DONE]" {
			if i != len(events)-1 {
				t.Fatalf("[DONE] at %d of %d", i, len(events))
			}
			r.Done = true
			continue
		}
		d := e.json(t)
		if d["object"] != "chat.completion.chunk" {
			t.Fatalf("chunk %v", d)
		}
		if u, ok := d["usage"].(map[string]any); ok {
			r.Usage = u
		}
		for _, raw := range d["choices"].([]any) {
			choice := raw.(map[string]any)
			if f, ok := choice["finish_reason"].(string); ok {
				r.FinishReason = f
			}
			delta := choice["delta"].(map[string]any)
			if role, ok := delta["role"].(string); ok {
				r.Role = role
			}
			if c, ok := delta["content"].(string); ok && c != "" {
				r.Text += c
				r.TextDeltas++
			}
			for _, rawCall := range arrayField(delta, "tool_calls") {
				tc := rawCall.(map[string]any)
				index := int(tc["index"].(float64))
				fn := tc["function"].(map[string]any)
				if index == len(r.Calls) {
					id, _ := tc["id"].(string)
					name, _ := fn["name"].(string)
					if id == "" || tc["type"] != "function" || name == "" {
						t.Fatalf("tool call %d opened without id, type or name: %v", index, tc)
					}
					r.Calls = append(r.Calls, chatCall{ID: id, Name: name})
				}
				if args, _ := fn["arguments"].(string); args != "" {
					r.Calls[index].Arguments += args
					r.Calls[index].Deltas++
				}
			}
		}
	}
	if r.Role != "assistant" || r.FinishReason == "" || !r.Done {
		t.Fatalf("stream without role, finish_reason or [DONE]: %+v", r)
	}
	return r
}

func TestChatStreamCarriesTextToolCallsAndUsage(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{
		Text:   "Creating it.",
		Chunks: 2,
		Tools: ToolSet{OpenAI: []ToolCall{
			{Name: "create", Input: json.RawMessage(`{"path":"/w/hello.txt","file_text":"héllo\n"}`), Chunks: 5},
			{Name: "bash", Input: json.RawMessage(`{"command":"cat hello.txt","description":"show"}`)},
		}},
		Usage: &Usage{Input: 300, Output: 40, CacheRead: 12},
	}}})
	resp := post(ctx, t, url+"/v1/chat/completions", chatBody(true, true, "go", "create", "bash"), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := accumulateChat(t, events)
	if r.Text != "Creating it." || r.TextDeltas != 2 {
		t.Errorf("text %q in %d deltas", r.Text, r.TextDeltas)
	}
	if len(r.Calls) != 2 || r.Calls[0].Name != "create" || r.Calls[1].Name != "bash" || r.Calls[0].Deltas != 5 {
		t.Fatalf("calls %+v", r.Calls)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(r.Calls[0].Arguments), &args); err != nil || args["file_text"] != "héllo\n" {
		t.Errorf("arguments %q: %v", r.Calls[0].Arguments, err)
	}
	if r.FinishReason != "tool_calls" {
		t.Errorf("finish_reason %q", r.FinishReason)
	}
	want := map[string]any{
		"prompt_tokens": 300.0, "completion_tokens": 40.0, "total_tokens": 340.0,
		"prompt_tokens_details":     map[string]any{"cached_tokens": 12.0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0.0},
	}
	if !reflect.DeepEqual(r.Usage, want) {
		t.Errorf("usage %v", r.Usage)
	}
}

func TestChatUsageChunkOnlyWhenAsked(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "one", Always: true}}})
	for _, include := range []bool{true, false} {
		resp := post(ctx, t, url+"/v1/chat/completions", chatBody(true, include, "x"), nil)
		events, err := readEvents(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r := accumulateChat(t, events)
		if (r.Usage != nil) != include {
			t.Errorf("include_usage=%v: usage %v", include, r.Usage)
		}
		if r.FinishReason != "stop" || r.Text != "one" {
			t.Errorf("result %+v", r)
		}
	}
}

func TestChatNonStreaming(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Tools: ToolSet{Default: []ToolCall{{ID: "call_x", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}}}}}})
	resp := post(ctx, t, url+"/v1/chat/completions", chatBody(false, false, "x", "bash"), nil)
	m := decodeJSON(t, readAll(t, resp.Body))
	choice := m["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	if choice["finish_reason"] != "tool_calls" || msg["content"] != nil || call["id"] != "call_x" || call["function"].(map[string]any)["arguments"] != `{"command":"ls"}` {
		t.Errorf("completion %v", m)
	}
}

func TestChatStreamErrorChunk(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "abc", StreamError: &StreamError{AfterEvents: 1}}}})
	resp := post(ctx, t, url+"/v1/chat/completions", chatBody(true, true, "x"), nil)
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || !strings.Contains(events[1].Data, `"error"`) {
		t.Fatalf("events %v", events)
	}
	if e := events[1].json(t)["error"].(map[string]any); e["type"] != "server_error" {
		t.Errorf("error %v", e)
	}
}

func TestFreeformCallOnChatIsAClearServerError(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Tools: ToolSet{Default: []ToolCall{{Name: "apply_patch", Freeform: "*** Begin Patch"}}}}}})
	resp := post(ctx, t, url+"/v1/chat/completions", chatBody(true, true, "x"), nil)
	body := string(readAll(t, resp.Body))
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "freeform") {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
	if r := s.Requests()[0]; r.Outcome != OutcomeError || !strings.Contains(r.Note, "freeform") {
		t.Errorf("logged %+v", r)
	}
}
