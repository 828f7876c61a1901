package fakemodel

import (
	"fmt"
	"net/http"
	"strings"
)

// incoming is a model request as matching sees it.
type incoming struct {
	api    API
	path   string
	header http.Header
	conv   *conversation
}

// matches reports whether every predicate of m holds for in; a nil Match
// holds for every request.
func (m *Match) matches(in *incoming) bool {
	if m == nil {
		return true
	}
	c := in.conv
	switch {
	case m.API != "" && m.API != in.api,
		m.Path != "" && m.Path != in.path,
		m.Model != "" && m.Model != c.model,
		m.LastUserContains != "" && !strings.Contains(c.lastUserText(), m.LastUserContains),
		m.Contains != "" && !c.contains(m.Contains),
		m.ToolResultContains != "" && !strings.Contains(c.lastToolResult(), m.ToolResultContains),
		m.HasTools != nil && *m.HasTools != c.hasTools,
		m.HasTool != "" && !c.declares(m.HasTool):
		return false
	}
	for name, want := range m.Headers {
		if !strings.Contains(strings.Join(in.header.Values(name), ", "), want) {
			return false
		}
	}
	return true
}

// dispatch picks the step that answers in, then logs the request under it.
//
// The order is: side steps, first match wins; then the head of the script,
// if its match (or the scenario's default match) holds; then the fallback.
func (s *Server) dispatch(rec *Request, in *incoming) (*Step, int) {
	s.mu.Lock()
	st, label, note := s.pickLocked(in)
	s.mu.Unlock()
	return st, s.admit(rec, label, note)
}

func (s *Server) pickLocked(in *incoming) (*Step, string, string) {
	for i := range s.scenario.Side {
		st := &s.scenario.Side[i]
		if st.Times > 0 && s.sideUsed[i] >= st.Times {
			continue
		}
		if st.Match.matches(in) {
			s.sideUsed[i]++
			return st, stepLabel(st, "side", i), ""
		}
	}
	var note string
	if s.head < len(s.scenario.Steps) {
		st := &s.scenario.Steps[s.head]
		label := stepLabel(st, "steps", s.head)
		m := st.Match
		if m == nil {
			m = s.scenario.Match
		}
		if m.matches(in) {
			s.scriptUsed[s.head]++
			if !st.Always && s.scriptUsed[s.head] >= max(1, st.Times) {
				s.head++
			}
			return st, label, ""
		}
		note = fmt.Sprintf("the next step, %s, does not match this request", label)
	} else {
		note = "the script is exhausted"
	}
	return s.fallback, labelFallback, note
}

func stepLabel(st *Step, list string, i int) string {
	if st.Name != "" {
		return st.Name
	}
	return fmt.Sprintf("%s[%d]", list, i)
}

// answer is a step rendered for one request, ready to be delivered.
type answer struct {
	step   *Step
	gate   *gate // non-nil when the step holds
	status int
	header http.Header
	stream bool
	events []sseEvent // when stream
	body   []byte     // when not stream
	// streamErr is the in-band error event StreamError asks for.
	streamErr *sseEvent
	note      string
}

// prepare renders st for the request in.
func (s *Server) prepare(seq int, st *Step, in *incoming) (answer, error) {
	a := answer{step: st, gate: s.gates[st.Name], status: http.StatusOK, header: http.Header{}}
	if !st.Hold {
		a.gate = nil
	}
	setRequestID(a.header, in.api, seq)
	if st.Error != nil {
		a.status = st.Error.Status
		body, contentType := errorBody(in.api, seq, st.Error)
		a.body = body
		a.header.Set("Content-Type", contentType)
		for name, value := range st.Error.Headers {
			a.header.Set(name, value)
		}
		return a, nil
	}
	r, err := newReply(seq, st, in.api, in.conv, s.varsFor(in.conv))
	if err != nil {
		return answer{}, err
	}
	a.note = r.note
	if se := st.StreamError; se != nil && !in.conv.stream {
		// A non-streaming request cannot fail in-band: answer the same
		// error as an HTTP error.
		status := streamErrorStatus(in.api, se.Type)
		a.status = status
		a.body, _ = errorBody(in.api, seq, &ErrorReply{Status: status, Type: se.Type, Message: se.Message})
		a.header.Set("Content-Type", "application/json")
		return a, nil
	}
	a.stream = in.conv.stream
	if !a.stream {
		a.header.Set("Content-Type", "application/json")
		switch in.api {
		case APIAnthropic:
			a.body = r.anthropicMessage()
		case APIResponses:
			a.body = r.responsesBody()
		case APIChat:
			a.body = r.chatBody()
		}
		return a, nil
	}
	a.header.Set("Content-Type", "text/event-stream; charset=utf-8")
	a.header.Set("Cache-Control", "no-cache")
	switch in.api {
	case APIAnthropic:
		a.events = r.anthropicEvents()
	case APIResponses:
		a.events = r.responsesEvents()
	case APIChat:
		a.events = r.chatEvents(in.conv.includeUsage)
	}
	if se := st.StreamError; se != nil {
		ev := streamErrorEvent(in.api, seq, min(se.AfterEvents, len(a.events)), r.model, se)
		a.streamErr = &ev
	}
	return a, nil
}

// streamErrorEvent renders a StreamError in the format of api.
func streamErrorEvent(api API, seq, sequenceNumber int, model string, se *StreamError) sseEvent {
	message := se.Message
	switch api {
	case APIAnthropic:
		typ := se.Type
		if typ == "" {
			typ = "overloaded_error"
		}
		if message == "" {
			message = "Overloaded"
		}
		return sseEvent{name: "error", data: mustJSON(obj{{"type", "error"}, {"error", obj{{"type", typ}, {"message", message}}}})}
	case APIResponses:
		code := se.Type
		if code == "" {
			code = "server_error"
		}
		if message == "" {
			message = "The server had an error while processing your request."
		}
		return responsesFailedEvent(seq, sequenceNumber, model, code, message)
	default:
		typ := se.Type
		if typ == "" {
			typ = "server_error"
		}
		if message == "" {
			message = "The server had an error while processing your request."
		}
		return chatErrorEvent(typ, message)
	}
}

// streamErrorStatus is the HTTP status matching an in-band error type.
func streamErrorStatus(api API, typ string) int {
	switch typ {
	case "overloaded_error":
		return 529
	case "rate_limit_error", "rate_limit_exceeded":
		return http.StatusTooManyRequests
	case "", "api_error", "server_error":
		if api == APIAnthropic && typ == "" {
			return 529
		}
	}
	return http.StatusInternalServerError
}
