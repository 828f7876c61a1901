package api

import "github.com/corral-dev/corral/pkg/wire"

// Roles a terminal client asks for and is granted.
const (
	RoleOwner    = "owner"
	RoleReadOnly = "read-only"
)

// Types of the JSON text frames of the terminal WebSocket
// (GET /v1/sessions/{id}/terminals/{termId}). Binary frames carry the
// terminal's bytes: output from the server, keystrokes from the owner.
const (
	// FrameOpened is the server's first frame: the role granted and the
	// terminal's size.
	FrameOpened = "opened"
	// FrameExit is the server's last frame when the program ended.
	FrameExit = "exit"
	// FrameError reports a refused input or resize (Fatal false: the
	// stream goes on), or why the stream ended (Fatal true: the server
	// closes the connection next).
	FrameError = "error"
	// FrameResize is the only frame a client sends as text: the owner's
	// new window size.
	FrameResize = "resize"
)

// TermFrame is one text frame of the terminal WebSocket, in either
// direction. Fields that do not apply to Type are left out.
type TermFrame struct {
	Type string `json:"type"`

	// opened
	TermID   string `json:"termId,omitempty"`
	ClientID string `json:"clientId,omitempty"`
	Role     string `json:"role,omitempty"`

	// opened, resize
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`

	// exit: the exit status, or -1 with the signal's name when a signal
	// ended the program.
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`

	// error
	Code    wire.Code `json:"code,omitempty"`
	Message string    `json:"message,omitempty"`
	Fatal   bool      `json:"fatal,omitempty"`
}

// MaxTermFrame bounds one binary frame the server sends; a client must
// accept messages this large (plus a little for a text frame).
const MaxTermFrame = 256 << 10
