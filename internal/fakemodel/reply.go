package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Usage reported when a step gives none.
const (
	defaultInputTokens  = 100
	defaultOutputTokens = 10
)

// reply is a step's answer in neutral form, ready to be rendered in any
// format.
type reply struct {
	seq   int    // request number; ids derive from it so logs line up
	model string // echoed from the request
	text  []string
	calls []call
	usage Usage
	// note says which tool list was chosen when that was not obvious.
	note string
}

type call struct {
	id       string // explicit id, or empty to generate one
	name     string
	args     string // compact JSON object, or the freeform text
	freeform bool
	chunks   []string
}

// newReply prepares a step's answer to a request in format api, filling in
// placeholders from vars.
func newReply(seq int, st *Step, api API, conv *conversation, vars map[string]string) (reply, error) {
	text, err := expand(st.Text, vars, identity)
	if err != nil {
		return reply{}, fmt.Errorf("text: %w", err)
	}
	r := reply{
		seq:   seq,
		model: conv.model,
		text:  split(text, st.Chunks),
		usage: Usage{Input: defaultInputTokens, Output: defaultOutputTokens},
	}
	if r.model == "" {
		r.model = "fake-model"
	}
	if st.Usage != nil {
		r.usage = *st.Usage
	}
	calls, note := chooseCalls(st.Tools, api, conv)
	r.note = note
	if st.Text == "" && len(calls) == 0 {
		return reply{}, fmt.Errorf("the step has no text and no tool calls for the %s format", api)
	}
	for _, tc := range calls {
		c := call{id: tc.ID, name: tc.Name}
		switch {
		case tc.Freeform != "":
			if api != APIResponses {
				return reply{}, fmt.Errorf("tool call %q is freeform, which only the Responses format can carry; give a %s list", tc.Name, api)
			}
			input, err := expand(tc.Freeform, vars, identity)
			if err != nil {
				return reply{}, fmt.Errorf("tool call %q: %w", tc.Name, err)
			}
			c.args, c.freeform = input, true
		case len(bytes.TrimSpace(tc.Input)) == 0:
			c.args = "{}"
		default:
			// Placeholders can only sit inside JSON strings (anywhere else
			// the input would not be JSON), so escaping values as string
			// content keeps the input valid.
			input, err := expand(string(tc.Input), vars, jsonEscape)
			if err != nil {
				return reply{}, fmt.Errorf("tool call %q: %w", tc.Name, err)
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(input)); err != nil {
				return reply{}, fmt.Errorf("tool call %q: input: %w", tc.Name, err)
			}
			c.args = buf.String()
		}
		c.chunks = split(c.args, tc.Chunks)
		r.calls = append(r.calls, c)
	}
	return r, nil
}

// chooseCalls picks the first candidate list whose tool names the request
// declares, else the first candidate, and says so when it had to fall back.
func chooseCalls(t ToolSet, api API, conv *conversation) ([]ToolCall, string) {
	candidates := t.candidates(api)
	if len(candidates) == 0 {
		return nil, ""
	}
	for _, calls := range candidates {
		if declaresAll(conv, calls) {
			return calls, ""
		}
	}
	var names []string
	for _, c := range candidates[0] {
		names = append(names, c.Name)
	}
	return candidates[0], fmt.Sprintf("the request does not declare tool(s) %s; calling them anyway", strings.Join(names, ", "))
}

func declaresAll(conv *conversation, calls []ToolCall) bool {
	for _, c := range calls {
		if !conv.declares(c.Name) {
			return false
		}
	}
	return true
}

// split cuts s into n pieces of about equal rune counts. It never splits a
// rune, and it returns nothing for an empty string.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	runes := utf8.RuneCountInString(s)
	n = max(1, min(n, runes))
	pieces := make([]string, 0, n)
	rest := s
	for i := n; i > 0; i-- {
		size := utf8.RuneCountInString(rest) / i
		cut := 0
		for range size {
			_, w := utf8.DecodeRuneInString(rest[cut:])
			cut += w
		}
		if i == 1 {
			cut = len(rest)
		}
		pieces = append(pieces, rest[:cut])
		rest = rest[cut:]
	}
	return pieces
}

// fullText is the whole assistant text.
func (r reply) fullText() string {
	return strings.Join(r.text, "")
}

// callID is the id of the i-th tool call: the scenario's, else one made from
// the request number with the format's usual prefix.
func (r reply) callID(i int, prefix string) string {
	if id := r.calls[i].id; id != "" {
		return id
	}
	return fmt.Sprintf("%s_fake_%d_%d", prefix, r.seq, i)
}
