package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object, as received in a reply or returned by
// a request handler.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// ErrProtocol is matched by errors about messages that are well framed but
// are not valid JSON-RPC 2.0, or that this side cannot route.
var ErrProtocol = errors.New("jsonrpc: protocol error")

// Kind classifies a message.
type Kind int

// Message kinds.
const (
	KindRequest      Kind = iota + 1 // method and id: expects a reply
	KindNotification                 // method, no id
	KindReply                        // id (or a null id), result or error
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindReply:
		return "reply"
	}
	return "invalid"
}

// Message is one decoded JSON-RPC message.
type Message struct {
	Kind Kind
	// Version is the "jsonrpc" member, empty when absent (Codex's
	// app-server leaves it out).
	Version string
	// ID is the id in a canonical JSON form, an integer or a string, so
	// that 7, 7.0 and 7e0 route alike; nil for notifications and for
	// error replies about a message the peer could not read (null id).
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// ParseMessage decodes and classifies one message body. It refuses
// anything that could not be routed: a value other than an object, data
// after it, an id that is neither an integer nor a string, an empty
// method, a request with a null id, a reply with both or neither of
// result and error, a successful reply without an id. Errors match
// ErrProtocol.
func ParseMessage(body []byte) (Message, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return Message{}, fmt.Errorf("%w: body is not a JSON object: %q", ErrProtocol, truncate(body))
	}
	var raw struct {
		Version *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		// Say whether it is an object followed by more data, or no
		// object at all (the slow path only errors take).
		dec := json.NewDecoder(bytes.NewReader(body))
		var obj map[string]json.RawMessage
		if dec.Decode(&obj) == nil && dec.More() {
			return Message{}, fmt.Errorf("%w: data after the JSON object: %q", ErrProtocol, truncate(body))
		}
		return Message{}, fmt.Errorf("%w: body is not a JSON object: %v: %q", ErrProtocol, err, truncate(body))
	}
	var m Message
	if raw.Version != nil {
		m.Version = *raw.Version
	}
	id, err := CanonicalID(raw.ID)
	if err != nil {
		return Message{}, err
	}
	m.ID = id
	if raw.Method != nil {
		if *raw.Method == "" {
			return Message{}, fmt.Errorf("%w: a message with an empty method", ErrProtocol)
		}
		if raw.Result != nil || raw.Error != nil {
			return Message{}, fmt.Errorf("%w: message %q has a method and a result or error", ErrProtocol, *raw.Method)
		}
		m.Method, m.Params = *raw.Method, raw.Params
		switch {
		case m.ID != nil:
			m.Kind = KindRequest
		case raw.ID != nil:
			return Message{}, fmt.Errorf("%w: request %q has a null id", ErrProtocol, m.Method)
		default:
			m.Kind = KindNotification
		}
		return m, nil
	}
	if raw.ID == nil || (raw.Result == nil && raw.Error == nil) {
		return Message{}, fmt.Errorf("%w: neither a request, a notification nor a reply: %q", ErrProtocol, truncate(body))
	}
	m.Kind = KindReply
	switch {
	case raw.Result != nil && raw.Error != nil:
		return Message{}, fmt.Errorf("%w: reply %s has both a result and an error", ErrProtocol, raw.ID)
	case raw.Error != nil:
		var e Error
		if isNull(raw.Error) || json.Unmarshal(raw.Error, &e) != nil {
			return Message{}, fmt.Errorf("%w: reply %s has a malformed error object: %q", ErrProtocol, raw.ID, truncate(raw.Error))
		}
		m.Error = &e
	default:
		m.Result = raw.Result
		if m.ID == nil {
			return Message{}, fmt.Errorf("%w: a successful reply has a null id", ErrProtocol)
		}
	}
	return m, nil
}

// CanonicalID validates a request id and returns it in the canonical form
// Message.ID has (7, 7.0 and 7e0 are all 7; strings are re-encoded).
// Absent and null ids return nil.
func CanonicalID(raw json.RawMessage) (json.RawMessage, error) {
	if raw == nil || isNull(raw) {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: malformed string id %s", ErrProtocol, truncate(raw))
		}
		out, _ := json.Marshal(s)
		return out, nil
	default:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f != float64(int64(f)) {
			return nil, fmt.Errorf("%w: id %s is neither an integer nor a string", ErrProtocol, truncate(raw))
		}
		return json.RawMessage(strconv.FormatInt(int64(f), 10)), nil
	}
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// outMessage is a message this side sends. Version is left out for peers
// that do not use it.
type outMessage struct {
	Version string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}
