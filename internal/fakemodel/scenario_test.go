package fakemodel

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseScenarioErrors(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string // substrings of the error
	}{
		{"empty", "  ", []string{"scenario is empty"}},
		{"syntax error with position", "{\n  \"steps\": [\n    {\"text\": \"a\",}\n  ]\n}", []string{"line 3, column"}},
		{"wrong type with position", `{"steps": [{"text": "a", "chunks": "three"}]}`, []string{"line 1", "steps.chunks", "int"}},
		{"unknown field", `{"steps": [{"txt": "a"}]}`, []string{`unknown field "txt"`}},
		{"unknown tool field", `{"steps": [{"tools": [{"name": "Bash", "inputs": {}}]}]}`, []string{"tools", `unknown field "inputs"`}},
		{"unknown api in tools", `{"steps": [{"tools": {"gemini": []}}]}`, []string{"per-API", `unknown field "gemini"`}},
		{"trailing data", `{"steps": []} {}`, []string{"after the JSON value"}},
		{"bad duration", `{"steps": [{"text": "a", "delay": 50}]}`, []string{`duration: want a string such as "50ms"`}},
		{"unparsable duration", `{"steps": [{"text": "a", "delay": "soon"}]}`, []string{"duration", "soon"}},
		{"empty step", `{"steps": [{"name": "x"}]}`, []string{"steps[0]: a step needs text, tools or an error"}},
		{"reply and error", `{"steps": [{"text": "a", "error": {"status": 500}}]}`, []string{"steps[0]: a step has either a reply"}},
		{"status not an error", `{"steps": [{"error": {"status": 200}}]}`, []string{"steps[0].error.status: 200 is not an HTTP error status"}},
		{"body and message", `{"steps": [{"error": {"status": 500, "body": {}, "message": "m"}}]}`, []string{"either body or type/message"}},
		{"bad header name", `{"steps": [{"error": {"status": 500, "headers": {"a b": "c"}}}]}`, []string{`"a b" is not a header name`}},
		{"hold without name", `{"steps": [{"text": "a", "hold": true}]}`, []string{"steps[0].hold: a held step needs a name"}},
		{"holdAfter without hold", `{"steps": [{"text": "a", "holdAfter": 2}]}`, []string{"holdAfter: only applies with hold"}},
		{"two stream ends", `{"steps": [{"text": "a", "cutAfter": 1, "hangAfter": 2}]}`, []string{"use only one"}},
		{"negative cut", `{"steps": [{"text": "a", "cutAfter": -1}]}`, []string{"cutAfter: must not be negative"}},
		{"error with stream error", `{"steps": [{"error": {"status": 500}, "streamError": {"afterEvents": 1}}]}`, []string{"an error step sends no stream"}},
		{"times and always", `{"steps": [{"text": "a", "times": 2, "always": true}]}`, []string{"times and always exclude each other"}},
		{"delay too long", `{"steps": [{"text": "a", "delay": "2h"}]}`, []string{"delay: must be between 0 and"}},
		{"duplicate names", `{"steps": [{"name": "a", "text": "x"}], "side": [{"name": "a", "text": "y", "match": {"api": "chat"}}]}`, []string{`side[0].name: "a" is already the name of steps[0]`}},
		{"reserved name", `{"steps": [{"name": "fallback", "text": "x"}]}`, []string{"reserved"}},
		{"side without match", `{"steps": [], "side": [{"text": "y"}]}`, []string{"side[0].match: a side step needs a match"}},
		{"fallback with match", `{"steps": [], "fallback": {"text": "y", "match": {"api": "chat"}}}`, []string{"fallback.match"}},
		{"unknown api", `{"steps": [{"text": "a", "match": {"api": "gemini"}}]}`, []string{`steps[0].match.api: "gemini" is not one of`}},
		{"relative path", `{"steps": [{"text": "a", "match": {"path": "v1/messages"}}]}`, []string{"must start with /"}},
		{"tool without name", `{"steps": [{"tools": [{"input": {}}]}]}`, []string{"steps[0].tools[0].name: must not be empty"}},
		{"input not an object", `{"steps": [{"tools": [{"name": "Bash", "input": ["ls"]}]}]}`, []string{"steps[0].tools[0].input: must be a JSON object"}},
		{"input and freeform", `{"steps": [{"tools": [{"name": "p", "input": {}, "freeform": "x"}]}]}`, []string{"not both"}},
		{"freeform for anthropic", `{"steps": [{"tools": {"anthropic": [{"name": "p", "freeform": "x"}]}}]}`, []string{"steps[0].tools.anthropic[0].freeform: the Messages API has no freeform tools"}},
		{"bad placeholder", `{"steps": [{"text": "${not valid}"}]}`, []string{"steps[0].text", "placeholder"}},
		{"open placeholder", `{"steps": [{"text": "cat ${file"}]}`, []string{"steps[0].text", "not closed"}},
		{"unclosed placeholder", `{"steps": [{"tools": [{"name": "a", "input": {"p": "${cwd"}}]}]}`, []string{"steps[0].tools[0].input: placeholder"}},
		{"bad var name", `{"steps": [], "vars": {"a-b": "x"}}`, []string{"vars", `"a-b"`}},
		{"auth without key", `{"steps": [], "auth": {"apiKey": ""}}`, []string{"auth.apiKey: must not be empty"}},
		{"usage negative", `{"steps": [{"text": "a", "usage": {"input": -1, "output": 1}}]}`, []string{"usage: token counts must not be negative"}},
		{"several problems at once", `{"steps": [{"name": "x"}, {"text": "a", "chunks": -2}]}`, []string{"steps[0]: a step needs", "steps[1].chunks: must not be negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(tt.json))
			if err == nil {
				t.Fatal("parsed without error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestParseScenarioReadsEveryField(t *testing.T) {
	sc, err := ParseScenario([]byte(`{
		"name": "n", "description": "d",
		"auth": {"apiKey": "k"},
		"match": {"hasTools": true},
		"vars": {"file": "a.txt"},
		"models": ["m"],
		"steps": [
			{"name": "s", "text": "hi", "chunks": 2, "delay": "15ms", "hold": true, "holdAfter": 3,
			 "tools": {"anthropic": [{"name": "Write", "input": {"file_path": "${file}"}, "chunks": 2}],
			           "responses": [{"id": "call_1", "name": "apply_patch", "freeform": "patch"}]},
			 "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheCreation": 4, "reasoning": 5},
			 "cutAfter": 7, "times": 2},
			{"error": {"status": 529, "type": "overloaded_error", "message": "busy", "headers": {"retry-after": "0"}}, "always": true}
		],
		"side": [{"match": {"api": "anthropic", "path": "/v1/messages", "model": "m", "lastUserContains": "a",
		                    "contains": "b", "toolResultContains": "c", "hasTool": "Write", "headers": {"x": "y"}},
		          "text": "t", "streamError": {"afterEvents": 1, "type": "api_error", "message": "m"}}],
		"fallback": {"text": "bye"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	st := sc.Steps[0]
	if st.Name != "s" || st.Chunks != 2 || time.Duration(st.Delay) != 15*time.Millisecond || !st.Hold || st.HoldAfter != 3 || *st.CutAfter != 7 || st.Times != 2 {
		t.Errorf("step %+v", st)
	}
	if len(st.Tools.Anthropic) != 1 || st.Tools.Responses[0].Freeform != "patch" || st.Tools.Responses[0].ID != "call_1" {
		t.Errorf("tools %+v", st.Tools)
	}
	if *st.Usage != (Usage{1, 2, 3, 4, 5}) {
		t.Errorf("usage %+v", st.Usage)
	}
	if e := sc.Steps[1].Error; e.Status != 529 || e.Headers["retry-after"] != "0" || !sc.Steps[1].Always {
		t.Errorf("error step %+v", sc.Steps[1])
	}
	if m := sc.Side[0].Match; m.API != APIAnthropic || m.HasTool != "Write" || m.Headers["x"] != "y" || sc.Side[0].StreamError.AfterEvents != 1 {
		t.Errorf("side %+v", sc.Side[0])
	}
	if sc.Fallback.Text != "bye" || sc.Auth.APIKey != "k" || !*sc.Match.HasTools || sc.Vars["file"] != "a.txt" || sc.Models[0] != "m" {
		t.Errorf("scenario %+v", sc)
	}
}

func TestScenarioRoundTripsThroughJSON(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		sc, err := LoadScenario(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		data, err := json.Marshal(sc)
		if err != nil {
			t.Fatalf("%s: marshal: %v", file, err)
		}
		again, err := ParseScenario(data)
		if err != nil {
			t.Fatalf("%s: reparse: %v\n%s", file, err, data)
		}
		if !reflect.DeepEqual(normalize(t, sc), normalize(t, again)) {
			t.Errorf("%s changed in a round trip:\n%s", file, data)
		}
	}
}

// normalize compacts raw JSON fields so equal scenarios compare equal.
func normalize(t *testing.T, sc Scenario) string {
	t.Helper()
	data, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLoadScenarioNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(path, []byte(`{"steps": [{}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScenario(path); err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Errorf("error %v does not name the file", err)
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestInvalidScenarioFailsStartAndEveryRequest(t *testing.T) {
	ctx := testContext(t)
	bad := Scenario{Steps: []Step{{Name: "empty"}}}
	s := New(bad)
	defer s.Close()
	if _, err := s.Start(ctx, "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "a step needs text") {
		t.Errorf("Start: %v", err)
	}
	srv := New(bad)
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/messages", jsonReader(t, anthropicBody(true, "x"))))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "a step needs text") {
		t.Errorf("status %d body %s", rec.Code, rec.Body.String())
	}
}

func TestStartRefusesNonLoopbackAddresses(t *testing.T) {
	ctx := testContext(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.invalid:0"} {
		s := New(Scenario{Steps: []Step{}})
		if _, err := s.Start(ctx, addr); err == nil || !strings.Contains(err.Error(), "non-loopback") {
			t.Errorf("%s: %v", addr, err)
		}
		s.Close()
	}
	for _, addr := range []string{"localhost:0", "[::1]:0", "127.0.0.2:0"} {
		s := New(Scenario{Steps: []Step{}})
		url, err := s.Start(ctx, addr)
		if err != nil && !strings.Contains(err.Error(), "listen") { // ::1 may be missing
			t.Errorf("%s: %v", addr, err)
		}
		if err == nil && !strings.HasPrefix(url, "http://") {
			t.Errorf("%s: url %q", addr, url)
		}
		s.Close()
	}
}

func TestServerKeepsItsOwnCopyOfTheScenario(t *testing.T) {
	ctx := testContext(t)
	sc := Scenario{Steps: []Step{{Text: "original", Tools: ToolSet{Default: []ToolCall{{Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}}}}}}
	_, url := startServer(t, sc)
	sc.Steps[0].Text = "changed"
	sc.Steps[0].Tools.Default[0].Name = "Changed"
	m := decodeJSON(t, readAll(t, post(ctx, t, url+"/v1/messages", anthropicBody(false, "x", "Bash"), nil).Body))
	content := m["content"].([]any)
	if content[0].(map[string]any)["text"] != "original" || content[1].(map[string]any)["name"] != "Bash" {
		t.Errorf("content %v", content)
	}
}
