package fakemodel

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestAdminEndpoints(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Name: "held", Text: "x", Hold: true}}})
	done := make(chan []event, 1)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", jsonReader(t, chatBody(true, false, "x")))
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		defer resp.Body.Close()
		events, _ := readEvents(resp.Body)
		done <- events
	}()
	if err := s.WaitHeld(ctx, "held"); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(url + "/_fakemodel/requests")
	if err != nil {
		t.Fatal(err)
	}
	var logged []Request
	if err := json.Unmarshal(readAll(t, resp.Body), &logged); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(logged) != 1 || logged[0].Step != "held" {
		t.Errorf("requests %+v", logged)
	}

	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/_fakemodel/release?step=nope", http.StatusNotFound},
		{http.MethodGet, "/_fakemodel/release?step=held", http.StatusMethodNotAllowed},
		{http.MethodGet, "/_fakemodel/other", http.StatusNotFound},
		{http.MethodPost, "/_fakemodel/release?step=held", http.StatusNoContent},
	} {
		req, _ := http.NewRequestWithContext(ctx, tt.method, url+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		}
	}
	if events := <-done; len(events) == 0 || events[len(events)-1].Data != "[DONE]" {
		t.Errorf("released stream %v", events)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("control requests were logged: %d entries", n)
	}
}

func TestHeadAndUnknownPaths(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x"}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, url+"/api/hello", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD: %d", resp.StatusCode)
	}
	resp = post(ctx, t, url+"/v1/embeddings", map[string]any{"input": "x"}, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/messages", nil)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/messages: %d", resp.StatusCode)
	}
	if got := steps(s); len(got) != 3 || got[0] != labelHead || got[1] != labelNotFound || got[2] != labelBadRequest {
		t.Errorf("steps %v", got)
	}
	if s.Remaining() != 1 {
		t.Error("non-model requests consumed the script")
	}
}
