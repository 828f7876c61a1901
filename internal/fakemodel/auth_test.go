package fakemodel

import (
	"net/http"
	"testing"
)

func TestAuthRefusesMissingAndWrongCredentials(t *testing.T) {
	const key = "right-key"
	tests := []struct {
		name       string
		path       string
		body       map[string]any
		headers    map[string]string
		wantStatus int
		wantNote   string
	}{
		{"x-api-key accepted", "/v1/messages", anthropicBody(true, "x"), map[string]string{"x-api-key": key}, 200, ""},
		{"bearer accepted", "/v1/responses", responsesBody(true, "x"), map[string]string{"Authorization": "Bearer " + key}, 200, ""},
		{"missing", "/v1/messages", anthropicBody(true, "x"), nil, 401, "no credential"},
		{"wrong key", "/v1/chat/completions", chatBody(true, true, "x"), map[string]string{"Authorization": "Bearer wrong"}, 401, "wrong credential"},
		{"models too", "/v1/models", nil, map[string]string{"x-api-key": "wrong"}, 401, "wrong credential"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			s, url := startServer(t, Scenario{Auth: &Auth{APIKey: key}, Steps: []Step{{Text: "x"}}})
			var resp *http.Response
			if tt.body == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+tt.path, nil)
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				var err error
				if resp, err = http.DefaultClient.Do(req); err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
			} else {
				resp = post(ctx, t, url+tt.path, tt.body, tt.headers)
			}
			body := readAll(t, resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			r := s.Requests()[0]
			if tt.wantStatus == 401 {
				if r.Step != labelAuth || r.Note != tt.wantNote || s.Remaining() != 1 {
					t.Errorf("logged %+v, remaining %d", r, s.Remaining())
				}
				e := decodeJSON(t, body)["error"].(map[string]any)
				if e["message"] == "" {
					t.Errorf("error body %s", body)
				}
			}
		})
	}
}

func TestAuthErrorShapeFollowsTheAPI(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{
		Auth:  &Auth{APIKey: "k", Error: &ErrorReply{Status: 401, Headers: map[string]string{"x-should-retry": "false"}}},
		Steps: []Step{{Text: "x"}},
	})
	resp := post(ctx, t, url+"/v1/messages", anthropicBody(true, "x"), map[string]string{"x-api-key": "bad"})
	body := decodeJSON(t, readAll(t, resp.Body))
	if body["type"] != "error" || body["error"].(map[string]any)["type"] != "authentication_error" {
		t.Errorf("anthropic 401 body %v", body)
	}
	if resp.Header.Get("x-should-retry") != "false" {
		t.Errorf("x-should-retry %q", resp.Header.Get("x-should-retry"))
	}
	resp = post(ctx, t, url+"/v1/responses", responsesBody(true, "x"), nil)
	body = decodeJSON(t, readAll(t, resp.Body))
	if e := body["error"].(map[string]any); e["code"] != "invalid_api_key" {
		t.Errorf("openai 401 body %v", body)
	}
}
