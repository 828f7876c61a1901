package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// maxScenarioBytes bounds a scenario file; real ones are a few kilobytes.
const maxScenarioBytes = 16 << 20

// maxDelay bounds Step.Delay so a typo cannot stall a test for hours.
const maxDelay = 10 * time.Minute

// LoadScenario reads and validates a scenario file.
func LoadScenario(path string) (Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("load scenario: %w", err)
	}
	sc, err := ParseScenario(data)
	if err != nil {
		return Scenario{}, fmt.Errorf("load scenario %s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario decodes and validates a scenario. Unknown fields are errors,
// so a misspelt field cannot silently change what a test exercises.
func ParseScenario(data []byte) (Scenario, error) {
	if len(data) > maxScenarioBytes {
		return Scenario{}, fmt.Errorf("scenario is %d bytes, more than the %d allowed", len(data), maxScenarioBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Scenario{}, errors.New("scenario is empty")
	}
	var sc Scenario
	if err := strictUnmarshal(data, &sc); err != nil {
		return Scenario{}, describeJSONError(data, err)
	}
	if err := sc.Validate(); err != nil {
		return Scenario{}, err
	}
	return sc, nil
}

// describeJSONError adds the line and column to decoding errors that carry
// an offset.
func describeJSONError(data []byte, err error) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		line, col := position(data, syntax.Offset)
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	case errors.As(err, &typeErr):
		line, col := position(data, typeErr.Offset)
		return fmt.Errorf("line %d, column %d: field %s: want %s, got JSON %s", line, col, typeErr.Field, typeErr.Type, typeErr.Value)
	}
	return fmt.Errorf("decode scenario: %w", err)
}

func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	line, col = 1, 1
	for _, b := range data[:max(offset, 0)] {
		if b == '\n' {
			line++
			col = 1
			continue
		}
		col++
	}
	return line, col
}

// Validate reports every problem of the scenario, each with the path of the
// offending field.
func (sc Scenario) Validate() error {
	v := &validator{names: map[string]string{}}
	if sc.Auth != nil {
		if sc.Auth.APIKey == "" {
			v.add("auth.apiKey", "must not be empty")
		}
		if sc.Auth.Error != nil {
			v.errorReply("auth.error", sc.Auth.Error)
		}
	}
	if sc.Match != nil {
		v.match("match", sc.Match)
	}
	for i := range sc.Steps {
		v.step(fmt.Sprintf("steps[%d]", i), &sc.Steps[i])
	}
	for i := range sc.Side {
		path := fmt.Sprintf("side[%d]", i)
		if sc.Side[i].Match == nil {
			v.add(path+".match", "a side step needs a match, or it would answer every request")
		}
		v.step(path, &sc.Side[i])
	}
	if sc.Fallback != nil {
		if sc.Fallback.Match != nil {
			v.add("fallback.match", "the fallback answers whatever nothing else takes; it cannot have a match")
		}
		if sc.Fallback.Times != 0 || sc.Fallback.Always {
			v.add("fallback", "times and always do not apply to the fallback")
		}
		v.step("fallback", sc.Fallback)
	}
	for _, name := range slices.Sorted(maps.Keys(sc.Vars)) {
		if !varName().MatchString(name) {
			v.add("vars", fmt.Sprintf("%q is not a placeholder name (letters, digits and _)", name))
		}
	}
	for i, id := range sc.Models {
		if strings.TrimSpace(id) == "" {
			v.add(fmt.Sprintf("models[%d]", i), "must not be empty")
		}
	}
	return v.err()
}

type validator struct {
	problems []error
	names    map[string]string // step name -> path of its first use
}

func (v *validator) add(path, msg string) {
	v.problems = append(v.problems, fmt.Errorf("%s: %s", path, msg))
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return fmt.Errorf("invalid scenario: %w", errors.Join(v.problems...))
}

func (v *validator) step(path string, st *Step) {
	if st.Name != "" {
		if first, dup := v.names[st.Name]; dup {
			v.add(path+".name", fmt.Sprintf("%q is already the name of %s", st.Name, first))
		} else {
			v.names[st.Name] = path
		}
		if reservedLabel(st.Name) {
			v.add(path+".name", fmt.Sprintf("%q is reserved for the server's own answers", st.Name))
		}
	}
	if st.Match != nil {
		v.match(path+".match", st.Match)
	}
	hasReply := st.Text != "" || !st.Tools.IsZero()
	switch {
	case st.Error != nil && hasReply:
		v.add(path, "a step has either a reply (text, tools) or an error, not both")
	case st.Error == nil && !hasReply:
		v.add(path, "a step needs text, tools or an error")
	}
	if st.Error != nil {
		v.errorReply(path+".error", st.Error)
		if st.StreamError != nil {
			v.add(path+".streamError", "an error step sends no stream")
		}
	}
	if st.Chunks < 0 {
		v.add(path+".chunks", "must not be negative")
	}
	if err := checkPlaceholders(st.Text); err != nil {
		v.add(path+".text", err.Error())
	}
	v.tools(path+".tools", st.Tools)
	if u := st.Usage; u != nil && (u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheCreation < 0 || u.Reasoning < 0) {
		v.add(path+".usage", "token counts must not be negative")
	}
	if d := time.Duration(st.Delay); d < 0 || d > maxDelay {
		v.add(path+".delay", fmt.Sprintf("must be between 0 and %s", maxDelay))
	}
	if st.Hold && st.Name == "" {
		v.add(path+".hold", "a held step needs a name to release it by")
	}
	if st.HoldAfter != 0 && !st.Hold {
		v.add(path+".holdAfter", "only applies with hold: true")
	}
	if st.HoldAfter < 0 {
		v.add(path+".holdAfter", "must not be negative")
	}
	ends := 0
	for _, end := range []struct {
		name string
		n    *int
	}{{"cutAfter", st.CutAfter}, {"hangAfter", st.HangAfter}} {
		if end.n == nil {
			continue
		}
		ends++
		if *end.n < 0 {
			v.add(path+"."+end.name, "must not be negative")
		}
	}
	if st.StreamError != nil {
		ends++
		if st.StreamError.AfterEvents < 0 {
			v.add(path+".streamError.afterEvents", "must not be negative")
		}
	}
	if ends > 1 {
		v.add(path, "cutAfter, hangAfter and streamError each end the stream; use only one")
	}
	if st.Times < 0 {
		v.add(path+".times", "must not be negative")
	}
	if st.Times != 0 && st.Always {
		v.add(path, "times and always exclude each other")
	}
}

func (v *validator) match(path string, m *Match) {
	switch m.API {
	case "", APIAnthropic, APIResponses, APIChat:
	default:
		v.add(path+".api", fmt.Sprintf("%q is not one of anthropic, responses, chat", m.API))
	}
	if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
		v.add(path+".path", "must start with /")
	}
	for name := range m.Headers {
		if strings.TrimSpace(name) == "" {
			v.add(path+".headers", "header names must not be empty")
		}
	}
}

func (v *validator) errorReply(path string, e *ErrorReply) {
	if e.Status < 400 || e.Status > 599 {
		v.add(path+".status", fmt.Sprintf("%d is not an HTTP error status (400-599)", e.Status))
	}
	if len(e.Body) > 0 {
		if !json.Valid(e.Body) {
			v.add(path+".body", "is not valid JSON")
		} else if e.Type != "" || e.Message != "" {
			v.add(path, "give either body or type/message, not both")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.Headers)) {
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, ": \r\n") {
			v.add(path+".headers", fmt.Sprintf("%q is not a header name", name))
		}
		if strings.ContainsAny(e.Headers[name], "\r\n") {
			v.add(path+".headers."+name, "value must be on one line")
		}
	}
}

func (v *validator) tools(path string, t ToolSet) {
	lists := []struct {
		key         string
		calls       []ToolCall
		freeformOK  bool
		freeformWhy string
	}{
		{"default", t.Default, true, ""},
		{"anthropic", t.Anthropic, false, "the Messages API has no freeform tools"},
		{"openai", t.OpenAI, true, ""},
		{"responses", t.Responses, true, ""},
		{"chat", t.Chat, false, "Chat Completions has no freeform tools"},
	}
	for _, l := range lists {
		for i, c := range l.calls {
			p := fmt.Sprintf("%s.%s[%d]", path, l.key, i)
			if l.key == "default" && len(t.Anthropic)+len(t.OpenAI)+len(t.Responses)+len(t.Chat) == 0 {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			v.toolCall(p, c)
			if c.Freeform != "" && !l.freeformOK {
				v.add(p+".freeform", l.freeformWhy)
			}
		}
	}
}

func (v *validator) toolCall(path string, c ToolCall) {
	if strings.TrimSpace(c.Name) == "" {
		v.add(path+".name", "must not be empty")
	}
	if c.Chunks < 0 {
		v.add(path+".chunks", "must not be negative")
	}
	if err := checkPlaceholders(string(c.Input)); err != nil {
		v.add(path+".input", err.Error())
	}
	if err := checkPlaceholders(c.Freeform); err != nil {
		v.add(path+".freeform", err.Error())
	}
	hasInput := len(bytes.TrimSpace(c.Input)) > 0
	switch {
	case hasInput && c.Freeform != "":
		v.add(path, "give input (a JSON object) or freeform (text), not both")
	case hasInput:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(c.Input, &obj); err != nil || obj == nil {
			v.add(path+".input", "must be a JSON object")
		}
	}
}

// reservedLabel reports whether a step name would be confused with the labels
// the server logs for its own answers.
func reservedLabel(name string) bool {
	switch name {
	case labelFallback, labelAuth, labelBadRequest, labelModels, labelCountTokens, labelHead, labelNotFound, labelInvalid:
		return true
	}
	return false
}
