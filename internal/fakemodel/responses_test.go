package fakemodel

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"
)

// responsesResult is a Responses stream rebuilt the way the SDK stream
// helpers do it: from output_index/content_index, failing on any event that
// refers to an item or part that was not added first.
type responsesResult struct {
	Output     []map[string]any
	TextDeltas int
	ArgDeltas  map[int]int
	Completed  map[string]any
	Failed     map[string]any
}

func accumulateResponses(t *testing.T, events []event) responsesResult {
	t.Helper()
	r := responsesResult{ArgDeltas: map[int]int{}}
	for i, e := range events {
		d := e.json(t)
		if d["type"] != e.Name {
			t.Fatalf("event %q carries type %v", e.Name, d["type"])
		}
		if seq := d["sequence_number"]; seq != float64(i) {
			t.Fatalf("event %d (%s) has sequence_number %v", i, e.Name, seq)
		}
		if i == 0 && e.Name != "response.created" {
			t.Fatalf("first event %s, want response.created", e.Name)
		}
		index := -1
		if v, ok := d["output_index"].(float64); ok {
			index = int(v)
		}
		item := func() map[string]any {
			if index < 0 || index >= len(r.Output) {
				t.Fatalf("%s refers to output %d of %d", e.Name, index, len(r.Output))
			}
			return r.Output[index]
		}
		switch e.Name {
		case "response.output_item.added":
			if index != len(r.Output) {
				t.Fatalf("item added at %d, want %d", index, len(r.Output))
			}
			r.Output = append(r.Output, d["item"].(map[string]any))
		case "response.content_part.added":
			it := item()
			it["content"] = append(it["content"].([]any), d["part"])
		case "response.output_text.delta":
			parts := item()["content"].([]any)
			part := parts[int(d["content_index"].(float64))].(map[string]any)
			part["text"] = part["text"].(string) + d["delta"].(string)
			r.TextDeltas++
		case "response.function_call_arguments.delta":
			it := item()
			it["arguments"] = it["arguments"].(string) + d["delta"].(string)
			r.ArgDeltas[index]++
		case "response.custom_tool_call_input.delta":
			it := item()
			it["input"] = it["input"].(string) + d["delta"].(string)
			r.ArgDeltas[index]++
		case "response.output_item.done":
			done := d["item"].(map[string]any)
			it := item()
			for _, key := range []string{"arguments", "input"} {
				if done[key] != nil && done[key] != it[key] {
					t.Fatalf("output %d: done %s %q, deltas gave %q", index, key, done[key], it[key])
				}
			}
			r.Output[index] = done
		case "response.completed":
			r.Completed = d["response"].(map[string]any)
		case "response.failed":
			r.Failed = d["response"].(map[string]any)
		}
	}
	return r
}

func TestResponsesStreamCarriesTextFunctionAndCustomCalls(t *testing.T) {
	ctx := testContext(t)
	sc := Scenario{Steps: []Step{{
		Text:   "Patching now.",
		Chunks: 2,
		Tools: ToolSet{Responses: []ToolCall{
			{Name: "exec_command", Input: json.RawMessage(`{"cmd":"cat hello.txt","sandbox_permissions":"require_escalated"}`), Chunks: 3},
			{Name: "apply_patch", Freeform: "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n", Chunks: 2},
		}},
		Usage: &Usage{Input: 1000, Output: 20, CacheRead: 100, Reasoning: 3},
	}}}
	_, url := startServer(t, sc)
	resp := post(ctx, t, url+"/v1/responses", responsesBody(true, "go", "exec_command", "apply_patch"), nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if names := eventNames(events); names[len(names)-1] != "response.completed" {
		t.Fatalf("last event %s", names[len(names)-1])
	}
	r := accumulateResponses(t, events)
	if len(r.Output) != 3 {
		t.Fatalf("output %v", r.Output)
	}
	msg := r.Output[0]
	text := msg["content"].([]any)[0].(map[string]any)["text"]
	if msg["type"] != "message" || msg["role"] != "assistant" || text != "Patching now." || r.TextDeltas != 2 {
		t.Errorf("message %v (%d deltas)", msg, r.TextDeltas)
	}
	fn := r.Output[1]
	if fn["type"] != "function_call" || fn["name"] != "exec_command" || fn["call_id"] == "" || r.ArgDeltas[1] != 3 {
		t.Errorf("function call %v (%d deltas)", fn, r.ArgDeltas[1])
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(fn["arguments"].(string)), &args); err != nil || args["cmd"] != "cat hello.txt" {
		t.Errorf("arguments %v: %v", fn["arguments"], err)
	}
	custom := r.Output[2]
	if custom["type"] != "custom_tool_call" || custom["name"] != "apply_patch" || custom["input"] != "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n" || r.ArgDeltas[2] != 2 {
		t.Errorf("custom call %v", custom)
	}
	if fn["call_id"] == custom["call_id"] {
		t.Error("call ids repeat")
	}
	if r.Completed["status"] != "completed" || len(r.Completed["output"].([]any)) != 3 {
		t.Errorf("completed %v", r.Completed)
	}
	wantUsage := map[string]any{
		"input_tokens": 1000.0, "input_tokens_details": map[string]any{"cached_tokens": 100.0},
		"output_tokens": 20.0, "output_tokens_details": map[string]any{"reasoning_tokens": 3.0},
		"total_tokens": 1020.0,
	}
	if !reflect.DeepEqual(r.Completed["usage"], wantUsage) {
		t.Errorf("usage %v", r.Completed["usage"])
	}
}

func TestToolListIsChosenByTheToolsTheRequestDeclares(t *testing.T) {
	// Codex and Copilot both speak the Responses API but name their tools
	// differently; one step serves both.
	step := Step{Tools: ToolSet{
		Anthropic: []ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"/f"}`)}},
		Responses: []ToolCall{{Name: "apply_patch", Freeform: "*** Begin Patch\n*** End Patch\n"}},
		OpenAI:    []ToolCall{{Name: "create", Input: json.RawMessage(`{"path":"/f"}`)}},
	}}
	tests := []struct {
		name     string
		path     string
		body     map[string]any
		wantTool string
		wantNote bool
	}{
		{"codex on responses", "/v1/responses", responsesBody(false, "x", "exec_command", "apply_patch"), "apply_patch", false},
		{"copilot on responses", "/v1/responses", responsesBody(false, "x", "bash", "create"), "create", false},
		{"copilot on chat", "/v1/chat/completions", chatBody(false, false, "x", "bash", "create"), "create", false},
		{"claude", "/v1/messages", anthropicBody(false, "x", "Write"), "Write", false},
		{"undeclared tools: first candidate, noted", "/v1/chat/completions", chatBody(false, false, "x", "other"), "create", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			s, url := startServer(t, Scenario{Steps: []Step{step}})
			resp := post(ctx, t, url+tt.path, tt.body, nil)
			raw := readAll(t, resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			var names []string
			m := decodeJSON(t, raw)
			switch {
			case m["output"] != nil:
				for _, it := range m["output"].([]any) {
					names = append(names, it.(map[string]any)["name"].(string))
				}
			case m["choices"] != nil:
				msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
				for _, c := range msg["tool_calls"].([]any) {
					names = append(names, c.(map[string]any)["function"].(map[string]any)["name"].(string))
				}
			default:
				for _, b := range m["content"].([]any) {
					names = append(names, b.(map[string]any)["name"].(string))
				}
			}
			if !slices.Equal(names, []string{tt.wantTool}) {
				t.Errorf("tools called %v, want %s", names, tt.wantTool)
			}
			if note := s.Requests()[0].Note; (note != "") != tt.wantNote {
				t.Errorf("note %q", note)
			}
		})
	}
}

func TestResponsesNonStreaming(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "Plain."}}})
	resp := post(ctx, t, url+"/v1/responses", responsesBody(false, "x"), nil)
	m := decodeJSON(t, readAll(t, resp.Body))
	out := m["output"].([]any)
	if m["object"] != "response" || m["status"] != "completed" || len(out) != 1 {
		t.Fatalf("response %v", m)
	}
	part := out[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	if part["type"] != "output_text" || part["text"] != "Plain." {
		t.Errorf("part %v", part)
	}
	if u := m["usage"].(map[string]any); u["total_tokens"] != 110.0 {
		t.Errorf("usage %v", u)
	}
}

func TestResponsesStreamErrorIsResponseFailed(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "never finished", StreamError: &StreamError{AfterEvents: 3, Type: "rate_limit_exceeded", Message: "slow down"}}}})
	resp := post(ctx, t, url+"/v1/responses", responsesBody(true, "x"), nil)
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := accumulateResponses(t, events)
	if len(events) != 4 || r.Failed == nil || r.Completed != nil {
		t.Fatalf("events %v", eventNames(events))
	}
	e := r.Failed["error"].(map[string]any)
	if r.Failed["status"] != "failed" || e["code"] != "rate_limit_exceeded" || e["message"] != "slow down" {
		t.Errorf("failed %v", r.Failed)
	}
}

func TestOpenAIErrorShape(t *testing.T) {
	tests := []struct {
		path     string
		status   int
		wantType string
		wantCode any
	}{
		{"/v1/responses", 401, "invalid_request_error", "invalid_api_key"},
		{"/v1/responses", 500, "server_error", nil},
		{"/v1/chat/completions", 429, "rate_limit_error", "rate_limit_exceeded"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			ctx := testContext(t)
			_, url := startServer(t, Scenario{Steps: []Step{{Error: &ErrorReply{Status: tt.status}}}})
			body := responsesBody(true, "x")
			if tt.path == "/v1/chat/completions" {
				body = chatBody(true, true, "x")
			}
			resp := post(ctx, t, url+tt.path, body, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d", resp.StatusCode)
			}
			e := decodeJSON(t, readAll(t, resp.Body))["error"].(map[string]any)
			if e["type"] != tt.wantType || e["code"] != tt.wantCode || e["message"] == "" {
				t.Errorf("error %v", e)
			}
		})
	}
}
