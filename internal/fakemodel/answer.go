package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// answerError sends an HTTP error in format shape and logs it under label.
func (s *Server) answerError(w http.ResponseWriter, rec *Request, shape API, label string, status int, message string) {
	seq := s.admit(rec, label, "")
	e := &ErrorReply{Status: status, Message: message}
	writeHTTPError(w, shape, seq, e)
	s.finish(seq, status, OutcomeError, "")
}

func (s *Server) answerAuth(w http.ResponseWriter, rec *Request, shape API, auth *Auth) {
	note := "no credential"
	if rec.Headers["x-api-key"] != "" || rec.Headers["authorization"] != "" {
		note = "wrong credential"
	}
	seq := s.admit(rec, labelAuth, note)
	e := auth.Error
	if e == nil {
		e = &ErrorReply{Status: http.StatusUnauthorized}
	}
	writeHTTPError(w, shape, seq, e)
	s.finish(seq, e.Status, OutcomeError, "")
}

// writeHTTPError writes e in the format of api (OpenAI's when unknown).
func writeHTTPError(w http.ResponseWriter, api API, seq int, e *ErrorReply) {
	body, contentType := errorBody(api, seq, e)
	h := w.Header()
	h.Set("Content-Type", contentType)
	setRequestID(h, api, seq)
	for name, value := range e.Headers {
		h.Set(name, value)
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// errorBody is the body of an error answer and its content type.
func errorBody(api API, seq int, e *ErrorReply) ([]byte, string) {
	if len(e.Body) > 0 {
		var text string
		if json.Unmarshal(e.Body, &text) == nil {
			return []byte(text), "text/plain; charset=utf-8"
		}
		return e.Body, "application/json"
	}
	message := e.Message
	if message == "" {
		message = defaultErrorMessage(api, e.Status)
	}
	if api == APIAnthropic {
		typ := e.Type
		if typ == "" {
			typ = anthropicErrorType(e.Status)
		}
		return anthropicError(seq, typ, message), "application/json"
	}
	code := openAIErrorCode(e.Status)
	if e.Type != "" {
		code = e.Type
	}
	return openAIError(e.Status, "", code, message), "application/json"
}

func defaultErrorMessage(api API, status int) string {
	switch status {
	case http.StatusUnauthorized:
		if api == APIAnthropic {
			return "invalid x-api-key"
		}
		return "Incorrect API key provided."
	case 529:
		return "Overloaded"
	}
	if text := http.StatusText(status); text != "" {
		return text
	}
	return "error " + strconv.Itoa(status)
}

func setRequestID(h http.Header, api API, seq int) {
	if api == APIAnthropic {
		h.Set("Request-Id", anthropicRequestID(seq))
		return
	}
	h.Set("X-Request-Id", fmt.Sprintf("req_fake_%d", seq))
}

func (s *Server) answerModels(w http.ResponseWriter, rec *Request, shape API) {
	seq := s.admit(rec, labelModels, "")
	ids := s.scenario.Models
	if len(ids) == 0 {
		ids = []string{"fake-model"}
	}
	data := []any{}
	var body []byte
	if shape == APIAnthropic {
		for _, id := range ids {
			data = append(data, obj{{"type", "model"}, {"id", id}, {"display_name", id}, {"created_at", "1970-01-01T00:00:00Z"}})
		}
		body = mustJSON(obj{{"data", data}, {"has_more", false}, {"first_id", ids[0]}, {"last_id", ids[len(ids)-1]}})
	} else {
		for _, id := range ids {
			data = append(data, obj{{"id", id}, {"object", "model"}, {"created", 0}, {"owned_by", "fakemodel"}})
		}
		body = mustJSON(obj{{"object", "list"}, {"data", data}})
	}
	w.Header().Set("Content-Type", "application/json")
	setRequestID(w.Header(), shape, seq)
	_, _ = w.Write(body)
	s.finish(seq, http.StatusOK, OutcomeCompleted, "")
}

func (s *Server) answerCountTokens(w http.ResponseWriter, rec *Request, conv *conversation) {
	seq := s.admit(rec, labelCountTokens, "")
	// About four characters a token, like the real tokenizers on English.
	tokens := max(1, conv.textChars()/4)
	w.Header().Set("Content-Type", "application/json")
	setRequestID(w.Header(), APIAnthropic, seq)
	_, _ = w.Write(mustJSON(obj{{"input_tokens", tokens}}))
	s.finish(seq, http.StatusOK, OutcomeCompleted, "")
}

// answerModel answers a model request from the scenario.
func (s *Server) answerModel(w http.ResponseWriter, r *http.Request, rec *Request, conv *conversation) {
	in := &incoming{api: rec.API, path: strings.TrimSuffix(r.URL.Path, "/"), header: r.Header, conv: conv}
	st, seq := s.dispatch(rec, in)
	a, err := s.prepare(seq, st, in)
	if err != nil {
		e := &ErrorReply{Status: http.StatusInternalServerError, Message: fmt.Sprintf("fake model server: step %s: %v", rec.Step, err)}
		writeHTTPError(w, rec.API, seq, e)
		s.finish(seq, e.Status, OutcomeError, err.Error())
		return
	}
	status, outcome := s.deliver(r.Context(), w, a)
	s.finish(seq, status, outcome, a.note)
}
