package fakemodel

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
)

// maxBodyBytes bounds a request body; agent requests are tens of kilobytes
// and grow with the conversation.
const maxBodyBytes = 64 << 20

// adminPrefix is where the control endpoints live (see admin.go).
const adminPrefix = "/_fakemodel/"

// endpoint is what a request path asks for.
type endpoint int

const (
	endpointUnknown endpoint = iota
	endpointMessages
	endpointCountTokens
	endpointResponses
	endpointChat
	endpointModels
)

// route maps a path, with or without the /v1 prefix, to an endpoint.
func route(path string) (endpoint, API) {
	p := strings.TrimSuffix(path, "/")
	p = strings.TrimPrefix(p, "/v1")
	switch p {
	case "/messages":
		return endpointMessages, APIAnthropic
	case "/messages/count_tokens":
		return endpointCountTokens, APIAnthropic
	case "/responses":
		return endpointResponses, APIResponses
	case "/chat/completions":
		return endpointChat, APIChat
	case "/models":
		return endpointModels, ""
	}
	return endpointUnknown, ""
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		http.Error(w, "fake model server is closed", http.StatusServiceUnavailable)
		return
	}
	defer s.leave()
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		s.serveAdmin(w, r)
		return
	}

	ep, api := route(r.URL.Path)
	rec := Request{
		Time:    time.Now().UTC(),
		Method:  r.Method,
		Path:    r.URL.Path,
		Query:   r.URL.RawQuery,
		API:     api,
		Headers: redactHeaders(r.Header),
	}
	// shape is the format of the answer's body: the request's, or for
	// other endpoints Anthropic's when the client speaks it.
	shape := api
	if shape == "" && r.Header.Get("anthropic-version") != "" {
		shape = APIAnthropic
	}
	body, bodyErr := readBody(r)
	rec.Body = logBody(body)

	if r.Method == http.MethodHead {
		seq := s.admit(&rec, labelHead, "")
		s.finish(seq, http.StatusOK, OutcomeCompleted, "")
		w.WriteHeader(http.StatusOK)
		return
	}
	if s.invalid != nil {
		s.answerError(w, &rec, shape, labelInvalid, http.StatusInternalServerError, "fake model server: "+s.invalid.Error())
		return
	}
	if ep == endpointUnknown {
		s.answerError(w, &rec, shape, labelNotFound, http.StatusNotFound, fmt.Sprintf("fake model server: no endpoint %s %s", r.Method, r.URL.Path))
		return
	}
	if auth := s.scenario.Auth; auth != nil && !presents(r.Header, auth.APIKey) {
		s.answerAuth(w, &rec, shape, auth)
		return
	}
	wantMethod := http.MethodPost
	if ep == endpointModels {
		wantMethod = http.MethodGet
	}
	if r.Method != wantMethod {
		w.Header().Set("Allow", wantMethod)
		s.answerError(w, &rec, shape, labelBadRequest, http.StatusMethodNotAllowed, fmt.Sprintf("fake model server: %s wants %s", r.URL.Path, wantMethod))
		return
	}
	if ep == endpointModels {
		s.answerModels(w, &rec, shape)
		return
	}
	if bodyErr != nil {
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		if errors.As(bodyErr, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		s.answerError(w, &rec, shape, labelBadRequest, status, "fake model server: "+bodyErr.Error())
		return
	}
	var decoded map[string]any
	if err := json.Unmarshal(body, &decoded); err != nil || decoded == nil {
		s.answerError(w, &rec, shape, labelBadRequest, http.StatusBadRequest, "fake model server: the body is not a JSON object")
		return
	}
	conv := parseConversation(api, decoded)
	if ep == endpointCountTokens {
		s.answerCountTokens(w, &rec, &conv)
		return
	}
	s.answerModel(w, r, &rec, &conv)
}

// readBody reads the whole body, undoing gzip content encoding.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	var src io.Reader = http.MaxBytesReader(nil, r.Body, maxBodyBytes)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("read gzip body: %w", err)
		}
		defer zr.Close()
		src = io.LimitReader(zr, maxBodyBytes+1)
	default:
		// Drain so the client sees the error response, not a reset.
		_, _ = io.Copy(io.Discard, src)
		return nil, fmt.Errorf("content encoding %q is not supported (only gzip)", enc)
	}
	body, err := io.ReadAll(src)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxBodyBytes {
		return nil, &http.MaxBytesError{Limit: maxBodyBytes}
	}
	return body, nil
}

// logBody is the body as the log keeps it: the JSON itself, or a JSON string
// when the body is not JSON.
func logBody(body []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil
	}
	if json.Valid(trimmed) {
		var buf bytes.Buffer
		if json.Compact(&buf, trimmed) == nil {
			return buf.Bytes()
		}
	}
	return mustJSON(string(body))
}

// presents reports whether the request carries key as x-api-key or as a
// bearer token.
func presents(h http.Header, key string) bool {
	if h.Get("X-Api-Key") == key {
		return true
	}
	scheme, token, ok := strings.Cut(h.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) == key
}

// admit logs a request that has been assigned to label and returns its seq.
func (s *Server) admit(rec *Request, label, note string) int {
	s.mu.Lock()
	s.seq++
	rec.Seq = s.seq
	rec.Step = label
	rec.Note = note
	s.requests = append(s.requests, *rec)
	s.notifyLocked()
	s.mu.Unlock()
	s.logRequest(*rec)
	return rec.Seq
}

func (s *Server) logRequest(rec Request) {
	fields := []zap.Field{zap.Int("seq", rec.Seq), zap.String("method", rec.Method), zap.String("path", rec.Path), zap.String("step", rec.Step)}
	if rec.Note != "" {
		fields = append(fields, zap.String("note", rec.Note))
	}
	if rec.Step == labelFallback {
		s.logger.Warn("answered with the fallback", fields...)
	} else {
		s.logger.Info("request", fields...)
	}
	if err := s.log.write(requestRecord{Kind: "request", Request: rec}); err != nil {
		s.logger.Error("write request log", zap.Error(err))
	}
}

// finish records how a request's answer ended.
func (s *Server) finish(seq, status int, outcome, note string) {
	s.mu.Lock()
	if i := seq - 1; i >= 0 && i < len(s.requests) {
		r := &s.requests[i]
		r.Status, r.Outcome = status, outcome
		if note != "" {
			r.Note = joinNotes(r.Note, note)
		}
	}
	s.notifyLocked()
	s.mu.Unlock()
	end := endRecord{Kind: "end", Seq: seq, Time: time.Now().UTC(), Status: status, Outcome: outcome, Note: note}
	if err := s.log.write(end); err != nil {
		s.logger.Error("write request log", zap.Error(err))
	}
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
