package fakemodel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corral-dev/corral/internal/testio"
)

func TestCredentialsAreFingerprintedNeverLogged(t *testing.T) {
	const apiKey, token = "sk-ant-secret-one", "sk-secret-two"
	ctx := testContext(t)
	var logFile testio.Buffer
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x", Always: true}}}, WithLog(&logFile))
	readAll(t, post(ctx, t, url+"/v1/messages", anthropicBody(true, "x"), map[string]string{"x-api-key": apiKey, "anthropic-version": "2023-06-01"}).Body)
	readAll(t, post(ctx, t, url+"/v1/responses", responsesBody(true, "x"), map[string]string{"Authorization": "Bearer " + token}).Body)
	readAll(t, post(ctx, t, url+"/v1/chat/completions", chatBody(true, false, "x"), nil).Body)

	reqs := s.Requests()
	if got := reqs[0].Headers["x-api-key"]; got != Fingerprint(apiKey) {
		t.Errorf("x-api-key logged as %q, want %q", got, Fingerprint(apiKey))
	}
	if got := reqs[1].Headers["authorization"]; got != "Bearer "+Fingerprint(token) {
		t.Errorf("authorization logged as %q", got)
	}
	if _, present := reqs[2].Headers["authorization"]; present {
		t.Error("absent authorization header logged as present")
	}
	if reqs[0].Headers["anthropic-version"] != "2023-06-01" {
		t.Errorf("other headers not kept: %v", reqs[0].Headers)
	}
	if Fingerprint(apiKey) == Fingerprint(token) {
		t.Error("fingerprints of different keys collide")
	}
	inMemory, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, where := range []string{string(inMemory), logFile.String()} {
		for _, secret := range []string{apiKey, token} {
			if strings.Contains(where, secret) {
				t.Errorf("secret %q appears in the log", secret)
			}
		}
	}
}

func TestLogFileHasARequestAndAnEndLinePerRequest(t *testing.T) {
	ctx := testContext(t)
	var logFile testio.Buffer
	s, url := startServer(t, Scenario{Steps: []Step{{Name: "answer", Text: "x"}}}, WithLog(&logFile))
	readAll(t, post(ctx, t, url+"/v1/messages", anthropicBody(true, "hello there"), nil).Body)
	outcomeOf(ctx, t, s, 1)

	var records []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logFile.String()))
	for sc.Scan() {
		records = append(records, decodeJSON(t, sc.Bytes()))
	}
	if len(records) != 2 {
		t.Fatalf("log lines:\n%s", logFile.String())
	}
	req, end := records[0], records[1]
	if req["kind"] != "request" || req["seq"] != 1.0 || req["step"] != "answer" || req["path"] != "/v1/messages" || req["api"] != "anthropic" {
		t.Errorf("request record %v", req)
	}
	body := req["body"].(map[string]any)
	if body["model"] != "claude-test" {
		t.Errorf("body not logged decoded: %v", body)
	}
	if end["kind"] != "end" || end["seq"] != 1.0 || end["outcome"] != OutcomeCompleted || end["status"] != 200.0 {
		t.Errorf("end record %v", end)
	}
}

func TestNonJSONBodyIsLoggedAsAString(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x"}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader("not json"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := s.Requests()[0]
	if resp.StatusCode != http.StatusBadRequest || r.Step != labelBadRequest || string(r.Body) != `"not json"` {
		t.Errorf("status %d, logged %+v", resp.StatusCode, r)
	}
	if s.Remaining() != 1 {
		t.Error("a bad request consumed the script")
	}
}

func TestConcurrentRequestsAreAllLoggedOnce(t *testing.T) {
	ctx := testContext(t)
	const n = 40
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x", Always: true}}})
	var wg sync.WaitGroup
	for i := range n {
		body := chatBody(true, true, fmt.Sprintf("request %d", i))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", jsonReader(t, body))
		wg.Go(func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if _, err := readEvents(resp.Body); err != nil {
				t.Error(err)
			}
			_ = s.Requests() // read while others write
		})
	}
	wg.Wait()
	reqs := s.Requests()
	if len(reqs) != n {
		t.Fatalf("%d requests logged, want %d", len(reqs), n)
	}
	var seqs, prompts []string
	for _, r := range reqs {
		seqs = append(seqs, fmt.Sprint(r.Seq))
		prompts = append(prompts, r.LastUserText())
	}
	slices.Sort(prompts)
	if unique := slices.Compact(prompts); len(unique) != n {
		t.Errorf("prompts logged more than once or lost: %v", prompts)
	}
	for i, r := range reqs {
		if r.Seq != i+1 {
			t.Fatalf("seqs out of order: %v", seqs)
		}
	}
}

func TestWaitForRequestSeesLaterArrivals(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x", Always: true}}})
	found := make(chan Request, 1)
	go func() {
		r, err := s.WaitForRequest(ctx, func(r Request) bool { return r.ContainsText("needle") })
		if err != nil {
			t.Error(err)
		}
		found <- r
	}()
	readAll(t, post(ctx, t, url+"/v1/responses", responsesBody(true, "hay"), nil).Body)
	readAll(t, post(ctx, t, url+"/v1/responses", responsesBody(true, "a needle"), nil).Body)
	if r := <-found; r.Seq != 2 {
		t.Errorf("found %+v", r)
	}
}
