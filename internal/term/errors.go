package term

import (
	"errors"
	"fmt"
)

var (
	// ErrExported is returned for an attach, input or resize through the
	// hub while the terminal is handed over to another reader (Export).
	ErrExported = errors.New("term: terminal is handed over to another reader")

	// ErrReadOnly is returned when a read-only client tries to type into or
	// resize a terminal.
	ErrReadOnly = errors.New("term: client is read-only")

	// ErrSlowClient ends the stream of a client that fell more than
	// HubOptions.ClientBufferBytes behind the terminal's output. The
	// terminal keeps running; the client may attach again to resynchronise
	// from the scrollback.
	ErrSlowClient = errors.New("term: client fell too far behind; output stream cut")

	// ErrHubClosed ends every stream when the hub shuts down, and refuses
	// attaches afterwards.
	ErrHubClosed = errors.New("term: hub closed")

	// ErrDetached is returned by a client that is no longer attached,
	// whatever detached it.
	ErrDetached = errors.New("term: client detached")

	// ErrClientExists refuses an attach whose client id is already attached
	// to the same terminal.
	ErrClientExists = errors.New("term: client id already attached to this terminal")
)

// StartError reports that a terminal's program could not be started; no
// terminal was created.
type StartError struct {
	TermID  string
	Command []string
	Err     error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("term: start terminal %q running %q: %v", e.TermID, e.Command, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }
