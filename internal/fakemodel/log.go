package fakemodel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Outcomes of a request, as recorded in Request.Outcome.
const (
	OutcomeCompleted    = "completed"     // the whole answer was sent
	OutcomeError        = "error"         // an HTTP error was sent
	OutcomeCut          = "cut"           // the connection was closed mid-answer on purpose
	OutcomeStreamError  = "stream-error"  // the stream ended with an in-band error event
	OutcomeClientGone   = "client-gone"   // the client went away first
	OutcomeServerClosed = "server-closed" // the server was closed first
)

// Request is one request as the server saw it and answered it.
type Request struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Query  string    `json:"query,omitempty"`
	// API is the format of a model request, empty for other endpoints.
	API API `json:"api,omitempty"`
	// Headers holds every header, lower-cased, multiple values joined by
	// ", ". Credential headers are present with their value replaced by a
	// fingerprint; see Fingerprint.
	Headers map[string]string `json:"headers"`
	// Body is the decoded JSON body; a body that is not JSON is kept as a
	// JSON string.
	Body json.RawMessage `json:"body,omitempty"`
	// Step is the name (or position, such as "steps[2]") of the step that
	// answered, "fallback", or the server's own label: "auth", "head",
	// "models", "count-tokens", "not-found", "bad-request",
	// "invalid-scenario".
	Step string `json:"step"`
	// Note explains a fallback answer or anything else unexpected.
	Note    string `json:"note,omitempty"`
	Status  int    `json:"status,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// LastUserText is the newest user-written text of a model request: tool
// results and system or developer messages do not count.
func (r Request) LastUserText() string {
	c := r.conversation()
	return c.lastUserText()
}

// LastToolResult is the text of the newest tool result in a model request.
func (r Request) LastToolResult() string {
	c := r.conversation()
	return c.lastToolResult()
}

// ContainsText reports whether sub occurs anywhere in the conversation of a
// model request: system prompt, messages, tool calls and tool results.
func (r Request) ContainsText(sub string) bool {
	c := r.conversation()
	return c.contains(sub)
}

func (r Request) conversation() conversation {
	var body map[string]any
	if json.Unmarshal(r.Body, &body) != nil {
		return conversation{}
	}
	return parseConversation(r.API, body)
}

// isCredentialHeader reports whether a lower-case header name carries a
// credential, which is never logged in clear.
func isCredentialHeader(name string) bool {
	switch name {
	case "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie":
		return true
	}
	return false
}

// Fingerprint is how a credential appears in the request log: a short hash
// that tells keys apart without revealing them. An Authorization header
// keeps its scheme: "Bearer " + Fingerprint(token).
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "redacted:" + hex.EncodeToString(sum[:6])
}

func redactHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for name, values := range h {
		key := strings.ToLower(name)
		value := strings.Join(values, ", ")
		if isCredentialHeader(key) {
			value = redact(value)
		}
		out[key] = value
	}
	return out
}

func redact(value string) string {
	if scheme, secret, ok := strings.Cut(value, " "); ok && !strings.Contains(scheme, "=") {
		return scheme + " " + Fingerprint(strings.TrimSpace(secret))
	}
	return Fingerprint(value)
}

// jsonlLog appends one JSON object per line: a "request" record when a
// request arrives and an "end" record when its answer is over, so a request
// that never ends is still visible.
type jsonlLog struct {
	mu sync.Mutex
	w  io.Writer
}

type requestRecord struct {
	Kind string `json:"kind"`
	Request
}

type endRecord struct {
	Kind    string    `json:"kind"`
	Seq     int       `json:"seq"`
	Time    time.Time `json:"time"`
	Status  int       `json:"status,omitempty"`
	Outcome string    `json:"outcome"`
	Note    string    `json:"note,omitempty"`
}

func (l *jsonlLog) write(v any) error {
	if l == nil || l.w == nil {
		return nil
	}
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(line)
	return err
}
