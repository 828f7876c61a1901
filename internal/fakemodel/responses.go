package fakemodel

import (
	"fmt"
	"net/http"
)

// OpenAI Responses API rendering. The stream is:
//
//	response.created, response.in_progress,
//	for the text: response.output_item.added (message),
//	  response.content_part.added, response.output_text.delta × chunks,
//	  response.output_text.done, response.content_part.done,
//	  response.output_item.done,
//	for each function call: response.output_item.added (function_call),
//	  response.function_call_arguments.delta × chunks,
//	  response.function_call_arguments.done, response.output_item.done,
//	for each freeform call: the same with custom_tool_call and
//	  response.custom_tool_call_input.delta/done,
//	response.completed (with usage).
//
// Every event carries a sequence_number, and output_index/content_index are
// consistent, because SDK stream helpers rebuild the response from them.

func responseID(seq int) string { return fmt.Sprintf("resp_fake_%d", seq) }

func (r reply) responsesUsage() obj {
	return obj{
		{"input_tokens", r.usage.Input},
		{"input_tokens_details", obj{{"cached_tokens", r.usage.CacheRead}}},
		{"output_tokens", r.usage.Output},
		{"output_tokens_details", obj{{"reasoning_tokens", r.usage.Reasoning}}},
		{"total_tokens", r.usage.Input + r.usage.Output},
	}
}

func (r reply) responseObject(status string, output []any, usage any) obj {
	return obj{
		{"id", responseID(r.seq)},
		{"object", "response"},
		{"created_at", 0},
		{"status", status},
		{"model", r.model},
		{"output", output},
		{"usage", usage},
	}
}

func (r reply) messageItem(status string, text string, done bool) obj {
	content := []any{}
	if done {
		content = append(content, outputText(text))
	}
	return obj{
		{"id", fmt.Sprintf("msg_fake_%d", r.seq)},
		{"type", "message"},
		{"status", status},
		{"role", "assistant"},
		{"content", content},
	}
}

func outputText(text string) obj {
	return obj{{"type", "output_text"}, {"text", text}, {"annotations", []any{}}}
}

func (r reply) callItemID(i int) string {
	if r.calls[i].freeform {
		return fmt.Sprintf("ctc_fake_%d_%d", r.seq, i)
	}
	return fmt.Sprintf("fc_fake_%d_%d", r.seq, i)
}

func (r reply) callItem(i int, status string, args string) obj {
	c := r.calls[i]
	if c.freeform {
		return obj{
			{"id", r.callItemID(i)},
			{"type", "custom_tool_call"},
			{"status", status},
			{"call_id", r.callID(i, "call")},
			{"name", c.name},
			{"input", args},
		}
	}
	return obj{
		{"id", r.callItemID(i)},
		{"type", "function_call"},
		{"status", status},
		{"call_id", r.callID(i, "call")},
		{"name", c.name},
		{"arguments", args},
	}
}

// outputItems is the finished output list.
func (r reply) outputItems() []any {
	items := []any{}
	if len(r.text) > 0 {
		items = append(items, r.messageItem("completed", r.fullText(), true))
	}
	for i, c := range r.calls {
		items = append(items, r.callItem(i, "completed", c.args))
	}
	return items
}

func (r reply) responsesEvents() []sseEvent {
	var events []sseEvent
	emit := func(name string, fields ...field) {
		head := obj{{"type", name}, {"sequence_number", len(events)}}
		events = append(events, sseEvent{name: name, data: mustJSON(append(head, fields...))})
	}
	emit("response.created", field{"response", r.responseObject("in_progress", []any{}, nil)})
	emit("response.in_progress", field{"response", r.responseObject("in_progress", []any{}, nil)})
	index := 0
	if len(r.text) > 0 {
		itemID := fmt.Sprintf("msg_fake_%d", r.seq)
		at := []field{{"item_id", itemID}, {"output_index", index}, {"content_index", 0}}
		emit("response.output_item.added", field{"output_index", index}, field{"item", r.messageItem("in_progress", "", false)})
		emit("response.content_part.added", append(at, field{"part", outputText("")})...)
		for _, piece := range r.text {
			emit("response.output_text.delta", append(at, field{"delta", piece})...)
		}
		emit("response.output_text.done", append(at, field{"text", r.fullText()})...)
		emit("response.content_part.done", append(at, field{"part", outputText(r.fullText())})...)
		emit("response.output_item.done", field{"output_index", index}, field{"item", r.messageItem("completed", r.fullText(), true)})
		index++
	}
	for i, c := range r.calls {
		at := []field{{"item_id", r.callItemID(i)}, {"output_index", index}}
		deltaEvent, doneEvent, doneField := "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments"
		if c.freeform {
			deltaEvent, doneEvent, doneField = "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
		}
		emit("response.output_item.added", field{"output_index", index}, field{"item", r.callItem(i, "in_progress", "")})
		for _, piece := range c.chunks {
			emit(deltaEvent, append(at, field{"delta", piece})...)
		}
		emit(doneEvent, append(at, field{doneField, c.args})...)
		emit("response.output_item.done", field{"output_index", index}, field{"item", r.callItem(i, "completed", c.args)})
		index++
	}
	emit("response.completed", field{"response", r.responseObject("completed", r.outputItems(), r.responsesUsage())})
	return events
}

func (r reply) responsesBody() []byte {
	return mustJSON(r.responseObject("completed", r.outputItems(), r.responsesUsage()))
}

// responsesFailedEvent is the in-band error of a Responses stream.
func responsesFailedEvent(seq, sequenceNumber int, model, code, message string) sseEvent {
	r := reply{seq: seq, model: model}
	failed := append(r.responseObject("failed", []any{}, nil), field{"error", obj{{"code", code}, {"message", message}}})
	return sseEvent{name: "response.failed", data: mustJSON(obj{
		{"type", "response.failed"},
		{"sequence_number", sequenceNumber},
		{"response", failed},
	})}
}

// openAIError is the error body of both OpenAI formats.
func openAIError(status int, typ, code, message string) []byte {
	var codeValue any
	if code != "" {
		codeValue = code
	}
	if typ == "" {
		typ = openAIErrorType(status)
	}
	return mustJSON(obj{{"error", obj{
		{"message", message},
		{"type", typ},
		{"param", nil},
		{"code", codeValue},
	}}})
}

func openAIErrorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// openAIErrorCode is the code the real API sets for a status, if any.
func openAIErrorCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	}
	return ""
}
