package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/corral-dev/corral/pkg/wire"
)

// Frame types the CLI writes on stdout.
const (
	typeControlRequest  = "control_request"
	typeControlResponse = "control_response"
	typeControlCancel   = "control_cancel_request"
	typeSystem          = "system"
	typeAssistant       = "assistant"
	typeUser            = "user"
	typeStreamEvent     = "stream_event"
	typeResult          = "result"
	// typeConversationReset precedes the system/init of a new
	// conversation when a /clear command empties the current one.
	typeConversationReset = "conversation_reset"
)

// frame is one line the CLI wrote on stdout, decoded only as far as routing
// needs; the typed views below decode the rest on demand.
type frame struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	SessionID string          `json:"session_id"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`
	Message   json.RawMessage `json:"message"`
	Event     json.RawMessage `json:"event"`
	// ParentToolUseID is set on frames of a subagent's conversation.
	ParentToolUseID *string `json:"parent_tool_use_id"`

	raw []byte
}

// errNotFrame wraps every reason a stdout line is not a protocol frame.
var errNotFrame = errors.New("not a stream-json frame")

// parseFrame decodes one stdout line. A line that is not a JSON object with a
// string "type" is an error: the CLI writes nothing else on stdout.
func parseFrame(line []byte) (*frame, error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: %q", errNotFrame, fragment(line))
	}
	f := new(frame)
	if err := json.Unmarshal(trimmed, f); err != nil {
		return nil, fmt.Errorf("%w: %v: %q", errNotFrame, err, fragment(line))
	}
	if f.Type == "" {
		return nil, fmt.Errorf("%w: no \"type\": %q", errNotFrame, fragment(line))
	}
	f.raw = append([]byte(nil), trimmed...)
	return f, nil
}

// frameReader reads frames from a CLI's stdout.
type frameReader struct{ lines *wire.LineReader }

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{lines: wire.NewLineReader(r, maxFrameBytes)}
}

// next returns the next frame; blank lines are skipped, a line that is not a
// frame is an error, io.EOF ends the stream.
func (fr *frameReader) next() (*frame, error) {
	for {
		line, err := fr.lines.Next()
		if err != nil {
			var lerr *wire.LineError
			if errors.As(err, &lerr) {
				return nil, fmt.Errorf("stdout line %d is longer than %d bytes", lerr.Line, maxFrameBytes)
			}
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return parseFrame(line)
	}
}

// kind names a frame for logs and golden transcripts: type, subtype and, for
// control and stream frames, what they carry.
func (f *frame) kind() string {
	switch f.Type {
	case typeControlRequest:
		var r struct {
			Subtype string `json:"subtype"`
		}
		_ = json.Unmarshal(f.Request, &r)
		return f.Type + "/" + r.Subtype
	case typeControlResponse:
		var r struct {
			Subtype string `json:"subtype"`
		}
		_ = json.Unmarshal(f.Response, &r)
		return f.Type + "/" + r.Subtype
	case typeStreamEvent:
		var e struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(f.Event, &e)
		return f.Type + "/" + e.Type
	case typeAssistant, typeUser:
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(f.Message, &m)
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			return f.Type + "/text"
		}
		kinds := make([]string, 0, len(blocks))
		for _, b := range blocks {
			kinds = append(kinds, b.Type)
		}
		return f.Type + "/" + strings.Join(kinds, "+")
	}
	if f.Subtype != "" {
		return f.Type + "/" + f.Subtype
	}
	return f.Type
}

// fragment is the start of a line, for error messages.
func fragment(b []byte) string {
	const max = 160
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
