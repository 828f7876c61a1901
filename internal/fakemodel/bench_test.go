package fakemodel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func benchStep() Step {
	return Step{
		Text:   strings.Repeat("streamed words ", 20),
		Chunks: 20,
		Tools: ToolSet{Default: []ToolCall{
			{Name: "Write", Input: json.RawMessage(`{"file_path":"/w/hello.txt","content":"hello\n"}`), Chunks: 4},
			{Name: "Bash", Input: json.RawMessage(`{"command":"cat hello.txt"}`), Chunks: 2},
		}},
		Always: true,
	}
}

// BenchmarkServeStream measures rendering and writing one streamed reply
// (20 text deltas, two tool calls) per format, without a network.
func BenchmarkServeStream(b *testing.B) {
	for _, tt := range []struct {
		name string
		path string
		body map[string]any
	}{
		{"anthropic", "/v1/messages", anthropicBody(true, "x", "Write", "Bash")},
		{"responses", "/v1/responses", responsesBody(true, "x", "Write", "Bash")},
		{"chat", "/v1/chat/completions", chatBody(true, true, "x", "Write", "Bash")},
	} {
		b.Run(tt.name, func(b *testing.B) {
			srv := New(Scenario{Steps: []Step{benchStep()}})
			defer srv.Close()
			body, _ := json.Marshal(tt.body)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tt.path, bytes.NewReader(body)))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// BenchmarkRoundTripLoopback measures a whole streamed request over a
// loopback connection, as an engine sees it.
func BenchmarkRoundTripLoopback(b *testing.B) {
	srv := New(Scenario{Steps: []Step{benchStep()}})
	url, err := srv.Start(b.Context(), "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	body, _ := json.Marshal(anthropicBody(true, "x", "Write", "Bash"))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(url+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// BenchmarkParseScenario measures loading the largest ready scenario.
func BenchmarkParseScenario(b *testing.B) {
	data, err := os.ReadFile("testdata/scenarios/write-bash.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseScenario(data); err != nil {
			b.Fatal(err)
		}
	}
}
