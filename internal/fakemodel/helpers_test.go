package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testTimeout bounds waits in tests so a bug fails the test instead of
// hanging it; it is not a performance goal.
const testTimeout = 30 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// startServer runs sc on a loopback port for the duration of the test.
func startServer(t *testing.T, sc Scenario, opts ...Option) (*Server, string) {
	t.Helper()
	if err := sc.Validate(); err != nil {
		t.Fatalf("scenario: %v", err)
	}
	s := New(sc, opts...)
	url, err := s.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, url
}

// post sends body as JSON. It does not fail on HTTP errors; the caller
// checks the status.
func post(ctx context.Context, t *testing.T, url string, body any, headers map[string]string) *http.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func jsonReader(t *testing.T, body any) io.Reader {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(data)
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

func decodeJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return m
}

// event is a server-sent event as a client parses it.
type event struct {
	Name string
	Data string
}

func (e event) json(t *testing.T) map[string]any {
	t.Helper()
	return decodeJSON(t, []byte(e.Data))
}

// sseReader parses a server-sent event stream per the SSE spec: fields up to
// a blank line make an event, multi-line data joins with "\n".
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	return &sseReader{sc: sc}
}

// next returns the next event, io.EOF at a clean end, or the transport error.
func (r *sseReader) next() (event, error) {
	var ev event
	var data []string
	seen := false
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if seen {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
			continue
		}
		seen = true
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			ev.Name = value
		case "data":
			data = append(data, value)
		}
	}
	if err := r.sc.Err(); err != nil {
		return event{}, err
	}
	if seen {
		return event{}, fmt.Errorf("stream ended inside an event")
	}
	return event{}, io.EOF
}

// readEvents reads a whole stream; err is nil at a clean end.
func readEvents(r io.Reader) ([]event, error) {
	sr := newSSEReader(r)
	var events []event
	for {
		ev, err := sr.next()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
}

func eventNames(events []event) []string {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = e.Name
	}
	return names
}

// Request bodies like the ones the CLIs send, cut down to what matters.

func anthropicBody(stream bool, userText string, tools ...string) map[string]any {
	var defs []any
	for _, name := range tools {
		defs = append(defs, map[string]any{"name": name, "input_schema": map[string]any{"type": "object"}})
	}
	return map[string]any{
		"model":      "claude-test",
		"max_tokens": 1024,
		"stream":     stream,
		"system":     []any{map[string]any{"type": "text", "text": "You are a test."}},
		"messages":   []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": userText}}}},
		"tools":      defs,
	}
}

func responsesBody(stream bool, userText string, tools ...string) map[string]any {
	var defs []any
	for _, name := range tools {
		if name == "apply_patch" {
			defs = append(defs, map[string]any{"type": "custom", "name": name})
			continue
		}
		defs = append(defs, map[string]any{"type": "function", "name": name, "parameters": map[string]any{"type": "object"}})
	}
	return map[string]any{
		"model":  "gpt-test",
		"stream": stream,
		"input": []any{
			map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "You are a test."}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": userText}}},
		},
		"tools": defs,
	}
}

func chatBody(stream, includeUsage bool, userText string, tools ...string) map[string]any {
	var defs []any
	for _, name := range tools {
		defs = append(defs, map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": map[string]any{"type": "object"}}})
	}
	body := map[string]any{
		"model":  "gpt-test",
		"stream": stream,
		"messages": []any{
			map[string]any{"role": "system", "content": "You are a test."},
			map[string]any{"role": "user", "content": userText},
		},
		"tools": defs,
	}
	if includeUsage {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	return body
}

func intPtr(n int) *int { return &n }

func boolPtr(b bool) *bool { return &b }

// waitFor polls cond until it holds or the test's deadline passes. It is
// for state that changes just after an observable event, such as a handler
// returning after its request was logged as finished.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
