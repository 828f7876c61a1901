package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// maxLineBytes bounds one protocol line. Responses and item notifications
// carry whole command outputs and diffs, so the bound is generous; a longer
// line means the stream is unusable and the server is stopped.
const maxLineBytes = 64 << 20

// JSON-RPC error codes Corral sends back to the server.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// messageKind classifies a protocol message.
type messageKind int

const (
	kindRequest      messageKind = iota + 1 // method and id: expects an answer
	kindNotification                        // method, no id
	kindResponse                            // id (or null id), result or error
)

func (k messageKind) String() string {
	switch k {
	case kindRequest:
		return "request"
	case kindNotification:
		return "notification"
	case kindResponse:
		return "response"
	}
	return "invalid"
}

// message is one line of the app-server protocol. The server leaves out the
// "jsonrpc" member and numbers its own requests from 0, overlapping the
// client's ids, so only the presence of method and id tells a request from
// a response.
type message struct {
	Kind messageKind
	// ID is the request id in its canonical JSON form (an integer or a
	// string); empty for notifications and for error responses to lines
	// the server could not read.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *rpcError
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("codex app-server error %d: %s", e.Code, e.Message)
}

// errBlankLine is returned by parseMessage for an empty or all-space line.
var errBlankLine = errors.New("blank line")

// parseMessage decodes and classifies one protocol line. It accepts what the
// server actually sends and refuses anything that could not be routed: a
// value other than an object, an id that is neither an integer nor a string,
// an empty method, a response with both or neither of result and error.
func parseMessage(line []byte) (message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return message{}, errBlankLine
	}
	if line[0] != '{' {
		return message{}, fmt.Errorf("protocol line is not a JSON object: %s", clip(line, 60))
	}
	var raw struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return message{}, fmt.Errorf("decode protocol line: %w", err)
	}
	var m message
	id, err := canonicalID(raw.ID)
	if err != nil {
		return message{}, err
	}
	m.ID = id
	if raw.Method != nil {
		if *raw.Method == "" {
			return message{}, errors.New("protocol message has an empty method")
		}
		if raw.Result != nil || raw.Error != nil {
			return message{}, fmt.Errorf("protocol message %q has a method and a result or error", *raw.Method)
		}
		m.Method = *raw.Method
		m.Params = raw.Params
		if m.ID != nil {
			m.Kind = kindRequest
		} else {
			if isNull(raw.ID) {
				return message{}, fmt.Errorf("request %q has a null id", m.Method)
			}
			m.Kind = kindNotification
		}
		return m, nil
	}
	if raw.ID == nil {
		return message{}, errors.New("protocol message has neither a method nor an id")
	}
	m.Kind = kindResponse
	switch {
	case raw.Result != nil && raw.Error != nil:
		return message{}, fmt.Errorf("response %s has both a result and an error", m.ID)
	case raw.Error != nil:
		var e rpcError
		if err := json.Unmarshal(raw.Error, &e); err != nil || isNull(raw.Error) {
			return message{}, fmt.Errorf("response %s: malformed error object: %s", m.ID, clip(raw.Error, 60))
		}
		m.Error = &e
	case raw.Result != nil:
		m.Result = raw.Result
	default:
		return message{}, fmt.Errorf("response %s has neither a result nor an error", m.ID)
	}
	if m.ID == nil && m.Error == nil {
		return message{}, errors.New("success response has a null id")
	}
	return m, nil
}

// canonicalID validates a request id and returns it in a canonical form so
// that 7, 7.0 and 7e0 route alike. Absent and null ids return nil.
func canonicalID(raw json.RawMessage) (json.RawMessage, error) {
	if raw == nil || isNull(raw) {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("malformed string id %s", clip(raw, 40))
		}
		out, _ := json.Marshal(s)
		return out, nil
	default:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f != float64(int64(f)) {
			return nil, fmt.Errorf("id %s is neither an integer nor a string", clip(raw, 40))
		}
		return json.RawMessage(strconv.FormatInt(int64(f), 10)), nil
	}
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// clip shortens b for an error message.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
