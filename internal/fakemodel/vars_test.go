package fakemodel

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestPlaceholdersAreFilledPerRequest(t *testing.T) {
	step := Step{
		Text: "Writing ${file} in ${cwd}; literal $${cwd}.",
		Tools: ToolSet{
			Anthropic: []ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path": "${cwd}/${file}", "content": "${content}"}`)}},
			Responses: []ToolCall{{Name: "apply_patch", Freeform: "*** Add File: ${file}\n"}},
		},
		Always: true,
	}
	claude := anthropicBody(false, "go", "Write")
	claude["messages"] = append(claude["messages"].([]any), map[string]any{"role": "system", "content": []any{map[string]any{"type": "text",
		"text": "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /work/tree one\n - Is a git repository: false"}}})
	codex := responsesBody(false, "go", "apply_patch")
	codex["input"] = append([]any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text",
		"text": "<environment_context>\n  <cwd>/work/codex-tree</cwd>\n  <shell>bash</shell>\n</environment_context>"}}}}, codex["input"].([]any)...)

	tests := []struct {
		name      string
		opts      []Option
		path      string
		body      map[string]any
		wantText  string
		wantInput string
	}{
		{"claude prompt gives cwd; quotes and newlines stay valid JSON", nil, "/v1/messages", claude,
			"Writing a \"b\".txt in /work/tree one; literal ${cwd}.", `{"file_path":"/work/tree one/a \"b\".txt","content":"line\n"}`},
		{"codex prompt gives cwd", nil, "/v1/responses", codex,
			"Writing a \"b\".txt in /work/codex-tree; literal ${cwd}.", "*** Add File: a \"b\".txt\n"},
		{"WithVars overrides the prompt", []Option{WithVars(map[string]string{"cwd": "/given"})}, "/v1/messages", claude,
			"Writing a \"b\".txt in /given; literal ${cwd}.", `{"file_path":"/given/a \"b\".txt","content":"line\n"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			sc := Scenario{Steps: []Step{step}, Vars: map[string]string{"file": `a "b".txt`, "content": "line\n", "cwd": "/scenario-default"}}
			_, url := startServer(t, sc, tt.opts...)
			resp := post(ctx, t, url+tt.path, tt.body, nil)
			raw := readAll(t, resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			m := decodeJSON(t, raw)
			var text, input string
			if tt.path == "/v1/messages" {
				blocks := m["content"].([]any)
				text = blocks[0].(map[string]any)["text"].(string)
				in, _ := json.Marshal(blocks[1].(map[string]any)["input"])
				input = string(in)
			} else {
				out := m["output"].([]any)
				text = out[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
				input = out[1].(map[string]any)["input"].(string)
			}
			if text != tt.wantText {
				t.Errorf("text %q, want %q", text, tt.wantText)
			}
			if tt.path == "/v1/messages" {
				var got, want any
				if err := json.Unmarshal([]byte(input), &got); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(tt.wantInput), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("input %s, want %s", input, tt.wantInput)
				}
			} else if input != tt.wantInput {
				t.Errorf("input %q, want %q", input, tt.wantInput)
			}
		})
	}
}

func TestScenarioVarIsTheDefaultForCwd(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "in ${cwd}"}}, Vars: map[string]string{"cwd": "/default"}})
	if got := replyText(ctx, t, url, anthropicBody(false, "no environment here"), nil); got != "in /default" {
		t.Errorf("text %q", got)
	}
}

func TestMissingPlaceholderValueIsAClearServerError(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Name: "w", Tools: ToolSet{Default: []ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"${cwd}/x"}`)}}}}}})
	resp := post(ctx, t, url+"/v1/chat/completions", chatBody(true, true, "no cwd stated"), nil)
	body := string(readAll(t, resp.Body))
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "no value for placeholder(s) cwd") || !strings.Contains(body, "step w") {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
	if r := s.Requests()[0]; r.Outcome != OutcomeError {
		t.Errorf("logged %+v", r)
	}
}
