package fakemodel

import "fmt"

// OpenAI Chat Completions rendering. The stream is a series of data-only
// SSE chunks:
//
//	a first chunk with delta {role: "assistant", content: ""},
//	a chunk per text piece (delta.content),
//	for each tool call: a chunk opening it (index, id, type, function.name,
//	  empty arguments), then a chunk per argument piece,
//	a chunk with an empty delta and finish_reason ("stop" or "tool_calls"),
//	when the request asked for stream_options.include_usage: a chunk with
//	  no choices and the usage,
//	data: [DONE].

func chatID(seq int) string { return fmt.Sprintf("chatcmpl-fake-%d", seq) }

func (r reply) chatFinishReason() string {
	if len(r.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (r reply) chatUsage() obj {
	return obj{
		{"prompt_tokens", r.usage.Input},
		{"completion_tokens", r.usage.Output},
		{"total_tokens", r.usage.Input + r.usage.Output},
		{"prompt_tokens_details", obj{{"cached_tokens", r.usage.CacheRead}}},
		{"completion_tokens_details", obj{{"reasoning_tokens", r.usage.Reasoning}}},
	}
}

func (r reply) chatChunk(choices []any, extra ...field) obj {
	return append(obj{
		{"id", chatID(r.seq)},
		{"object", "chat.completion.chunk"},
		{"created", 0},
		{"model", r.model},
		{"choices", choices},
	}, extra...)
}

func chatChoice(delta obj, finish any) []any {
	return []any{obj{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}
}

func (r reply) chatEvents(includeUsage bool) []sseEvent {
	var events []sseEvent
	emit := func(chunk obj) {
		events = append(events, sseEvent{data: mustJSON(chunk)})
	}
	emit(r.chatChunk(chatChoice(obj{{"role", "assistant"}, {"content", ""}}, nil)))
	for _, piece := range r.text {
		emit(r.chatChunk(chatChoice(obj{{"content", piece}}, nil)))
	}
	for i, c := range r.calls {
		emit(r.chatChunk(chatChoice(obj{{"tool_calls", []any{obj{
			{"index", i},
			{"id", r.callID(i, "call")},
			{"type", "function"},
			{"function", obj{{"name", c.name}, {"arguments", ""}}},
		}}}}, nil)))
		for _, piece := range c.chunks {
			emit(r.chatChunk(chatChoice(obj{{"tool_calls", []any{obj{
				{"index", i},
				{"function", obj{{"arguments", piece}}},
			}}}}, nil)))
		}
	}
	emit(r.chatChunk(chatChoice(obj{}, r.chatFinishReason())))
	if includeUsage {
		emit(r.chatChunk([]any{}, field{"usage", r.chatUsage()}))
	}
	events = append(events, sseEvent{data: []byte("[DONE]")})
	return events
}

func (r reply) chatBody() []byte {
	msg := obj{{"role", "assistant"}}
	if len(r.text) > 0 {
		msg = append(msg, field{"content", r.fullText()})
	} else {
		msg = append(msg, field{"content", nil})
	}
	if len(r.calls) > 0 {
		calls := []any{}
		for i, c := range r.calls {
			calls = append(calls, obj{
				{"id", r.callID(i, "call")},
				{"type", "function"},
				{"function", obj{{"name", c.name}, {"arguments", c.args}}},
			})
		}
		msg = append(msg, field{"tool_calls", calls})
	}
	return mustJSON(obj{
		{"id", chatID(r.seq)},
		{"object", "chat.completion"},
		{"created", 0},
		{"model", r.model},
		{"choices", []any{obj{{"index", 0}, {"message", msg}, {"finish_reason", r.chatFinishReason()}}}},
		{"usage", r.chatUsage()},
	})
}

// chatErrorEvent is the in-band error of a Chat Completions stream: a chunk
// holding only an error object, as OpenAI-compatible servers send it.
func chatErrorEvent(typ, message string) sseEvent {
	return sseEvent{data: mustJSON(obj{{"error", obj{
		{"message", message},
		{"type", typ},
		{"param", nil},
		{"code", nil},
	}}})}
}
