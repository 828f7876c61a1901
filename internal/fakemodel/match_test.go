package fakemodel

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// replyText returns the text of a non-streaming Anthropic reply.
func replyText(ctx context.Context, t *testing.T, url string, body map[string]any, headers map[string]string) string {
	t.Helper()
	body["stream"] = false
	resp := post(ctx, t, url+"/v1/messages", body, headers)
	raw := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var text string
	for _, b := range decodeJSON(t, raw)["content"].([]any) {
		if s, ok := b.(map[string]any)["text"].(string); ok {
			text += s
		}
	}
	return text
}

func steps(s *Server) []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.Step)
	}
	return out
}

func TestSideStepsAnswerWithoutConsumingTheScript(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{
		Match: &Match{HasTools: boolPtr(true)},
		Steps: []Step{{Name: "one", Text: "first"}, {Name: "two", Text: "second"}},
		Side:  []Step{{Name: "title", Match: &Match{Contains: "Return JSON with a single"}, Text: `{"title":"Test session"}`}},
	})
	title := anthropicBody(false, "<session>\nfix it\n</session>")
	title["system"] = "Return JSON with a single \"title\" field"
	got := []string{
		replyText(ctx, t, url, title, nil),
		replyText(ctx, t, url, anthropicBody(false, "fix it", "Bash"), nil),
		replyText(ctx, t, url, title, nil),
		replyText(ctx, t, url, anthropicBody(false, "fix it", "Bash"), nil),
		replyText(ctx, t, url, anthropicBody(false, "fix it", "Bash"), nil),
	}
	want := []string{`{"title":"Test session"}`, "first", `{"title":"Test session"}`, "second", "done"}
	if !slices.Equal(got, want) {
		t.Errorf("replies %q, want %q", got, want)
	}
	if got, want := steps(s), []string{"title", "one", "title", "two", "fallback"}; !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if note := s.Requests()[4].Note; note != "the script is exhausted" {
		t.Errorf("fallback note %q", note)
	}
	if s.Remaining() != 0 {
		t.Errorf("remaining %d", s.Remaining())
	}
}

func TestScriptWaitsForItsNextStepToMatch(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{
		Steps:    []Step{{Name: "after-steer", Match: &Match{LastUserContains: "STEER"}, Text: "steered"}},
		Fallback: &Step{Text: "not yet"},
	})
	first := replyText(ctx, t, url, anthropicBody(false, "hello", "Bash"), nil)
	second := replyText(ctx, t, url, anthropicBody(false, "STEER: be brief", "Bash"), nil)
	if first != "not yet" || second != "steered" {
		t.Errorf("replies %q, %q", first, second)
	}
	if note := s.Requests()[0].Note; !strings.Contains(note, "after-steer") {
		t.Errorf("fallback note %q does not name the waiting step", note)
	}
}

func TestTimesAndAlways(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{
		Steps: []Step{{Text: "twice", Times: 2}, {Text: "forever", Always: true}},
		Side:  []Step{{Match: &Match{LastUserContains: "side"}, Text: "side once", Times: 1}},
	})
	var got []string
	for _, prompt := range []string{"a", "side", "b", "side", "c", "d"} {
		got = append(got, replyText(ctx, t, url, anthropicBody(false, prompt), nil))
	}
	want := []string{"twice", "side once", "twice", "forever", "forever", "forever"}
	if !slices.Equal(got, want) {
		t.Errorf("replies %q, want %q", got, want)
	}
}

func TestMatchPredicates(t *testing.T) {
	claudeAfterTool := anthropicBody(false, "create the file", "Write", "Bash")
	claudeAfterTool["messages"] = append(claudeAfterTool["messages"].([]any),
		map[string]any{"role": "system", "content": "# Environment\nPrimary working directory: /w"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Write", "input": map[string]any{"file_path": "/w/a"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "File created successfully"}}},
		map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "PostToolUse:Write hook additional context: STEER: keep it short"}}},
	)
	codexAfterTool := responsesBody(false, "create the file", "exec_command")
	codexAfterTool["input"] = append(codexAfterTool["input"].([]any),
		map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"ls"}`, "call_id": "c1"},
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 0"},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "STEER now"}}},
	)
	copilotAfterTool := chatBody(false, false, "create the file", "create")
	copilotAfterTool["messages"] = append(copilotAfterTool["messages"].([]any),
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "create", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": "The user rejected this tool call. User feedback: no"},
	)
	tests := []struct {
		name    string
		match   Match
		path    string
		body    map[string]any
		headers map[string]string
		want    bool
	}{
		{"last user text skips tool results and system messages", Match{LastUserContains: "create the file"}, "/v1/messages", claudeAfterTool, nil, true},
		{"hook context is not user text", Match{LastUserContains: "STEER"}, "/v1/messages", claudeAfterTool, nil, false},
		{"contains sees system messages", Match{Contains: "STEER: keep it short"}, "/v1/messages", claudeAfterTool, nil, true},
		{"newest tool result", Match{ToolResultContains: "File created"}, "/v1/messages", claudeAfterTool, nil, true},
		{"responses steer is the last user text", Match{LastUserContains: "STEER now"}, "/v1/responses", codexAfterTool, nil, true},
		{"responses tool output", Match{ToolResultContains: "exited with code 0"}, "/v1/responses", codexAfterTool, nil, true},
		{"developer message is not user text", Match{LastUserContains: "You are a test"}, "/v1/responses", codexAfterTool, nil, false},
		{"chat tool message", Match{ToolResultContains: "User feedback: no"}, "/v1/chat/completions", copilotAfterTool, nil, true},
		{"contains sees tool arguments", Match{Contains: `{"cmd":"ls"}`}, "/v1/responses", codexAfterTool, nil, true},
		{"api", Match{API: APIChat}, "/v1/chat/completions", copilotAfterTool, nil, true},
		{"api mismatch", Match{API: APIAnthropic}, "/v1/chat/completions", copilotAfterTool, nil, false},
		{"path without /v1", Match{Path: "/responses"}, "/responses", codexAfterTool, nil, true},
		{"path mismatch", Match{Path: "/v1/responses"}, "/responses", codexAfterTool, nil, false},
		{"model", Match{Model: "gpt-test"}, "/v1/responses", codexAfterTool, nil, true},
		{"has tool", Match{HasTool: "exec_command"}, "/v1/responses", codexAfterTool, nil, true},
		{"lacks tool", Match{HasTool: "apply_patch"}, "/v1/responses", codexAfterTool, nil, false},
		{"has no tools", Match{HasTools: boolPtr(false)}, "/v1/messages", anthropicBody(false, "x"), nil, true},
		{"has tools", Match{HasTools: boolPtr(false)}, "/v1/messages", claudeAfterTool, nil, false},
		{"header", Match{Headers: map[string]string{"X-Initiator": "agent"}}, "/v1/chat/completions", copilotAfterTool, map[string]string{"x-initiator": "agent"}, true},
		{"header missing", Match{Headers: map[string]string{"X-Initiator": "agent"}}, "/v1/chat/completions", copilotAfterTool, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			m := tt.match
			s, url := startServer(t, Scenario{Side: []Step{{Name: "hit", Match: &m, Text: "hit"}}})
			resp := post(ctx, t, url+tt.path, tt.body, tt.headers)
			readAll(t, resp.Body)
			if got := s.Requests()[0].Step == "hit"; got != tt.want {
				t.Errorf("matched %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequestHelpersReadTheConversation(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x"}}})
	body := chatBody(false, false, "please do it", "bash")
	body["messages"] = append(body["messages"].([]any), map[string]any{"role": "tool", "tool_call_id": "c", "content": "exit 0"})
	readAll(t, post(ctx, t, url+"/v1/chat/completions", body, nil).Body)
	r := s.Requests()[0]
	if r.LastUserText() != "please do it" || r.LastToolResult() != "exit 0" || !r.ContainsText("You are a test.") || r.ContainsText("absent") {
		t.Errorf("helpers: %q %q", r.LastUserText(), r.LastToolResult())
	}
}
