package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/corral-dev/corral/pkg/event"
)

// maxEventData bounds one event's data from a plugin. Tool output is the
// largest thing an engine emits; engines clip it well below this.
const maxEventData = 4 << 20

// decodeEvent turns an event a plugin emitted back into the wire.*Data value
// the runner's Host expects (the runner switches on those types). A plugin
// may emit only the engine's event types; the runner owns the rest, and a
// plugin must not forge them.
func decodeEvent(typ event.Type, raw json.RawMessage) (any, error) {
	if len(raw) > maxEventData {
		return nil, fmt.Errorf("%s event data is %d bytes, over the %d limit", typ, len(raw), maxEventData)
	}
	switch typ {
	case event.AssistantDelta, event.AssistantText:
		return decodeData[event.TextData](typ, raw)
	case event.ToolStarted:
		return decodeData[event.ToolStartedData](typ, raw)
	case event.ToolFinished:
		return decodeData[event.ToolFinishedData](typ, raw)
	case event.Usage:
		return decodeData[event.UsageData](typ, raw)
	case event.Context:
		return decodeData[event.ContextData](typ, raw)
	case event.Retry:
		return decodeData[event.RetryData](typ, raw)
	}
	return nil, fmt.Errorf("a plugin may emit assistantDelta, assistantText, toolStarted, toolFinished, usage, context and retry events, not %q", typ)
}

// decodeData decodes raw as a T; on error the value is nil.
func decodeData[T any](typ event.Type, raw json.RawMessage) (any, error) {
	var v T
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%s event has no data", typ)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s event data: %w", typ, err)
	}
	return v, nil
}
