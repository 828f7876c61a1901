package fakemodel

import (
	"encoding/json"
	"slices"
	"strings"
)

// Roles of a conversation in neutral form. System covers OpenAI's developer
// role and Claude Code's role:"system" entries inside messages[]; Tool is a
// tool result, wherever the format carries it.
const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
)

// conversation is what matching looks at in a model request, the same for
// every format.
type conversation struct {
	model        string
	stream       bool
	includeUsage bool // Chat Completions stream_options.include_usage
	messages     []message
	toolNames    []string
	hasTools     bool
}

type message struct {
	role  string
	texts []string
}

// parseConversation reads a decoded request body. It never fails: fields of
// an unexpected shape are skipped, since a request a CLI sent is evidence,
// not input to reject.
func parseConversation(api API, body map[string]any) conversation {
	c := conversation{
		model:  stringField(body, "model"),
		stream: body["stream"] == true,
	}
	switch api {
	case APIAnthropic:
		c.parseAnthropic(body)
	case APIResponses:
		c.parseResponses(body)
	case APIChat:
		c.parseChat(body)
	}
	return c
}

func (c *conversation) add(role string, texts []string) {
	if len(texts) == 0 && role != roleUser && role != roleAssistant {
		return
	}
	c.messages = append(c.messages, message{role: role, texts: texts})
}

func (c *conversation) parseAnthropic(body map[string]any) {
	c.add(roleSystem, textsOf(body["system"]))
	for _, raw := range arrayField(body, "messages") {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		role := normalRole(stringField(m, "role"))
		blocks, isList := m["content"].([]any)
		if !isList {
			c.add(role, textsOf(m["content"]))
			continue
		}
		// A user message holds tool results and text side by side; split
		// them so the newest user text and the newest tool result are each
		// found where a reader expects them.
		var texts []string
		for _, rawBlock := range blocks {
			block, ok := rawBlock.(map[string]any)
			if !ok {
				continue
			}
			switch stringField(block, "type") {
			case "tool_result":
				c.add(roleTool, textsOf(block["content"]))
			case "tool_use":
				texts = append(texts, stringField(block, "name"), compactJSON(block["input"]))
			default:
				if s, ok := block["text"].(string); ok {
					texts = append(texts, s)
				}
			}
		}
		if len(texts) > 0 || role != roleUser {
			c.add(role, texts)
		}
	}
	for _, raw := range arrayField(body, "tools") {
		if t, ok := raw.(map[string]any); ok {
			c.declare(stringField(t, "name"))
		}
	}
}

func (c *conversation) parseResponses(body map[string]any) {
	if s, ok := body["instructions"].(string); ok {
		c.add(roleSystem, []string{s})
	}
	switch input := body["input"].(type) {
	case string:
		c.add(roleUser, []string{input})
	case []any:
		for _, raw := range input {
			item, ok := raw.(map[string]any)
			if !ok {
				continue
			}
			switch stringField(item, "type") {
			case "function_call":
				c.add(roleAssistant, []string{stringField(item, "name"), stringField(item, "arguments")})
			case "custom_tool_call":
				c.add(roleAssistant, []string{stringField(item, "name"), stringField(item, "input")})
			case "function_call_output", "custom_tool_call_output":
				c.add(roleTool, textsOf(item["output"]))
			case "message", "":
				if role := stringField(item, "role"); role != "" {
					c.add(normalRole(role), textsOf(item["content"]))
				}
			}
		}
	}
	for _, raw := range arrayField(body, "tools") {
		if t, ok := raw.(map[string]any); ok {
			c.declare(stringField(t, "name"))
		}
	}
}

func (c *conversation) parseChat(body map[string]any) {
	if opts, ok := body["stream_options"].(map[string]any); ok {
		c.includeUsage = opts["include_usage"] == true
	}
	for _, raw := range arrayField(body, "messages") {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		role := normalRole(stringField(m, "role"))
		texts := textsOf(m["content"])
		for _, rawCall := range arrayField(m, "tool_calls") {
			call, _ := rawCall.(map[string]any)
			fn, _ := call["function"].(map[string]any)
			texts = append(texts, stringField(fn, "name"), stringField(fn, "arguments"))
		}
		c.add(role, texts)
	}
	for _, raw := range arrayField(body, "tools") {
		t, _ := raw.(map[string]any)
		fn, _ := t["function"].(map[string]any)
		c.declare(stringField(fn, "name"))
	}
}

func (c *conversation) declare(name string) {
	c.hasTools = true
	if name != "" {
		c.toolNames = append(c.toolNames, name)
	}
}

func (c *conversation) declares(name string) bool {
	return slices.Contains(c.toolNames, name)
}

// lastUserText is the newest user-written text.
func (c *conversation) lastUserText() string {
	return c.last(roleUser)
}

// lastToolResult is the text of the newest tool result.
func (c *conversation) lastToolResult() string {
	return c.last(roleTool)
}

func (c *conversation) last(role string) string {
	for i := len(c.messages) - 1; i >= 0; i-- {
		if m := c.messages[i]; m.role == role && len(m.texts) > 0 {
			return strings.Join(m.texts, "\n")
		}
	}
	return ""
}

func (c *conversation) contains(sub string) bool {
	for _, m := range c.messages {
		for _, t := range m.texts {
			if strings.Contains(t, sub) {
				return true
			}
		}
	}
	return false
}

// textChars counts the characters of the conversation, for count_tokens.
func (c *conversation) textChars() int {
	n := 0
	for _, m := range c.messages {
		for _, t := range m.texts {
			n += len(t)
		}
	}
	return n
}

func normalRole(role string) string {
	switch role {
	case "developer", "system":
		return roleSystem
	case "tool", "function":
		return roleTool
	case "assistant", "model":
		return roleAssistant
	}
	return roleUser
}

// textsOf collects the text of a content value: a string, or a list of
// strings and parts with a "text" field (text, input_text, output_text).
func textsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, part := range v {
			switch p := part.(type) {
			case string:
				out = append(out, p)
			case map[string]any:
				if s, ok := p["text"].(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	return nil
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func arrayField(m map[string]any, key string) []any {
	a, _ := m[key].([]any)
	return a
}

func compactJSON(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
