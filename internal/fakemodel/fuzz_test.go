package fakemodel

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseScenario checks that any input either fails with an error or
// yields a scenario that validates, survives a JSON round trip, and can be
// served without a panic.
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/scenarios/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"steps":[{"text":"a","tools":{"anthropic":[{"name":"x","input":{"a":"${cwd}"}}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("parsed scenario does not validate: %v", err)
		}
		out, err := json.Marshal(sc)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := ParseScenario(out); err != nil {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
		// Serve one request per format; held, hanging and slow steps would
		// block, so only steps that answer at once are exercised.
		for i := range sc.Steps {
			st := &sc.Steps[i]
			st.Hold, st.HoldAfter, st.HangAfter, st.Delay = false, 0, nil, 0
		}
		sc.Side, sc.Fallback, sc.Auth = nil, nil, nil
		srv := New(sc)
		defer srv.Close()
		for _, req := range []struct {
			path string
			body map[string]any
		}{
			{"/v1/messages", anthropicBody(true, "x", "Write")},
			{"/v1/responses", responsesBody(true, "x", "apply_patch")},
			{"/v1/chat/completions", chatBody(true, true, "x", "bash")},
		} {
			body, _ := json.Marshal(req.body)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, req.path, bytes.NewReader(body)))
			if rec.Code == 0 {
				t.Fatalf("%s: no status", req.path)
			}
		}
	})
}

// FuzzParseConversation checks that no request body makes the request
// reader panic, whatever its shape.
func FuzzParseConversation(f *testing.F) {
	for _, body := range []map[string]any{
		anthropicBody(true, "x", "Write"),
		responsesBody(true, "x", "apply_patch"),
		chatBody(true, true, "x", "bash"),
	} {
		data, _ := json.Marshal(body)
		f.Add(data)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"ok"}]}]}]}`))
	f.Add([]byte(`{"input":"plain","instructions":"sys","tools":[{"type":"web_search"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var body map[string]any
		if json.Unmarshal(data, &body) != nil {
			return
		}
		for _, api := range []API{APIAnthropic, APIResponses, APIChat} {
			c := parseConversation(api, body)
			_ = c.lastUserText()
			_ = c.lastToolResult()
			_ = c.contains("x")
			_ = detectCwd(&c)
		}
	})
}
