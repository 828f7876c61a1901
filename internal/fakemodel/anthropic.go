package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Anthropic Messages API rendering. The stream is, per message:
//
//	message_start, ping,
//	for each content block (the text, then each tool_use):
//	  content_block_start, content_block_delta × chunks, content_block_stop,
//	message_delta (stop_reason, usage), message_stop.

func anthropicMessageID(seq int) string { return fmt.Sprintf("msg_fake_%d", seq) }

func anthropicRequestID(seq int) string { return fmt.Sprintf("req_fake_%d", seq) }

func (r reply) anthropicStopReason() string {
	if len(r.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (r reply) anthropicUsage(output int) obj {
	return obj{
		{"input_tokens", r.usage.Input},
		{"cache_creation_input_tokens", r.usage.CacheCreation},
		{"cache_read_input_tokens", r.usage.CacheRead},
		{"output_tokens", output},
	}
}

func (r reply) anthropicEvents() []sseEvent {
	var events []sseEvent
	emit := func(name string, fields ...field) {
		events = append(events, sseEvent{name: name, data: mustJSON(append(obj{{"type", name}}, fields...))})
	}
	emit("message_start", field{"message", obj{
		{"id", anthropicMessageID(r.seq)},
		{"type", "message"},
		{"role", "assistant"},
		{"model", r.model},
		{"content", []any{}},
		{"stop_reason", nil},
		{"stop_sequence", nil},
		// The real API reports a token or so of output up front and the
		// total in message_delta.
		{"usage", r.anthropicUsage(min(1, r.usage.Output))},
	}})
	emit("ping")
	index := 0
	if len(r.text) > 0 {
		emit("content_block_start", field{"index", index}, field{"content_block", obj{{"type", "text"}, {"text", ""}}})
		for _, piece := range r.text {
			emit("content_block_delta", field{"index", index}, field{"delta", obj{{"type", "text_delta"}, {"text", piece}}})
		}
		emit("content_block_stop", field{"index", index})
		index++
	}
	for i, c := range r.calls {
		emit("content_block_start", field{"index", index}, field{"content_block", obj{
			{"type", "tool_use"},
			{"id", r.callID(i, "toolu")},
			{"name", c.name},
			{"input", obj{}},
		}})
		for _, piece := range c.chunks {
			emit("content_block_delta", field{"index", index}, field{"delta", obj{{"type", "input_json_delta"}, {"partial_json", piece}}})
		}
		emit("content_block_stop", field{"index", index})
		index++
	}
	emit("message_delta",
		field{"delta", obj{{"stop_reason", r.anthropicStopReason()}, {"stop_sequence", nil}}},
		field{"usage", r.anthropicUsage(r.usage.Output)})
	emit("message_stop")
	return events
}

func (r reply) anthropicMessage() []byte {
	content := []any{}
	if len(r.text) > 0 {
		content = append(content, obj{{"type", "text"}, {"text", r.fullText()}})
	}
	for i, c := range r.calls {
		content = append(content, obj{
			{"type", "tool_use"},
			{"id", r.callID(i, "toolu")},
			{"name", c.name},
			{"input", json.RawMessage(c.args)},
		})
	}
	return mustJSON(obj{
		{"id", anthropicMessageID(r.seq)},
		{"type", "message"},
		{"role", "assistant"},
		{"model", r.model},
		{"content", content},
		{"stop_reason", r.anthropicStopReason()},
		{"stop_sequence", nil},
		{"usage", r.anthropicUsage(r.usage.Output)},
	})
}

// anthropicErrorType is the error type the real API uses for a status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func anthropicError(seq int, typ, message string) []byte {
	return mustJSON(obj{
		{"type", "error"},
		{"error", obj{{"type", typ}, {"message", message}}},
		{"request_id", anthropicRequestID(seq)},
	})
}
