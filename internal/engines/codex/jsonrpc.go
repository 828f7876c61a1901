package codex

import (
	"bytes"
	"encoding/json"
)

// maxLineBytes bounds one protocol line. Responses and item notifications
// carry whole command outputs and diffs, so the bound is generous; a longer
// line means the stream is unusable and the server is stopped.
const maxLineBytes = 64 << 20

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// clip shortens b for an error message.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
