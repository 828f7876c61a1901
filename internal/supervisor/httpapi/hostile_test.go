package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

// TestHostileRequestsGetTheJSONError covers findings 6 and 7 of issue 18:
// each request below is refused with the JSON error naming what is wrong,
// never an HTML redirect, a wrapped-round seq, an accepted spec or a
// command that reaches a runner.
func TestHostileRequestsGetTheJSONError(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	// Redirects are not followed: a redirect is itself the failure.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer noRedirect.CloseIdleConnections()
	// The goal was 1 MiB of '<'; the body limit (1 MiB) leaves
	// this over the goal's limit still.
	big := strings.Repeat("<", 512<<10)
	tests := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		says                     string
	}{
		{"last seq as Last-Event-ID", "GET", "/v1/sessions/" + id + "/events?follow=false", "", []string{"Last-Event-ID", "9223372036854775807"}, 400, "Last-Event-ID"},
		{"session id .", "GET", "/v1/sessions/.", "", nil, 404, "no such endpoint"},
		{"session id ..", "GET", "/v1/sessions/..", "", nil, 404, "no such endpoint"},
		{"session id ....//", "GET", "/v1/sessions/....//", "", nil, 404, "no such endpoint"},
		{"session id //etc/passwd", "GET", "/v1/sessions//etc/passwd", "", nil, 404, "no such endpoint"},
		{"delete of ..", "DELETE", "/v1/sessions/..", "", nil, 404, "no such endpoint"},
		{"terminal id ..", "GET", "/v1/sessions/" + id + "/terminals/..", "", nil, 404, "no such endpoint"},
		{"a parent that does not exist", "POST", "/v1/sessions", `{"engine":"script","parent":"0123456789ab"}`, nil, 400, "parent"},
		{"goalLimit -5", "POST", "/v1/sessions", `{"engine":"script","goalLimit":-5}`, nil, 400, "goalLimit"},
		{"compactAt 1000", "POST", "/v1/sessions", `{"engine":"script","compactAt":1000}`, nil, 400, "compactAt"},
		{"a goal of 512 KiB of <", "POST", "/v1/sessions/" + id + "/commands", `{"cmd":"setGoal","goal":"` + big + `"}`, nil, 400, "goal is"},
		{"a message over the limit", "POST", "/v1/sessions/" + id + "/commands", `{"cmd":"send","text":"` + strings.Repeat("x", wire.MaxMessageBytes+1) + `"}`, nil, 400, "text is"},
		{"a spec goal over the limit", "POST", "/v1/sessions", `{"engine":"script","goal":{"text":"` + strings.Repeat("x", wire.MaxGoalBytes+1) + `"}}`, nil, 400, "goal.text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, f.srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, raw, tc.status)
			}
			if e := errorOf(t, resp.StatusCode, raw); !strings.Contains(e.Message, tc.says) {
				t.Fatalf("error %q does not say %q", e.Message, tc.says)
			}
		})
	}
	// Nothing was created along the way.
	code, raw := f.do("GET", "/v1/sessions", "")
	if code != 200 || strings.Count(string(raw), `"live":`) != 1 {
		t.Fatalf("sessions after the hostile requests: %d %s", code, raw)
	}
}
