package wire

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error class. Codes travel across every
// process boundary (wire, control.sock, HTTP) so callers can branch on them.
// A code says nothing of any transport's status: the supervisor's HTTP API
// maps codes onto HTTP statuses at its edge (pkg/api).
type Code string

// Error codes. Keep docs/wire.md in step when adding one.
const (
	CodeRunnerCrashed         Code = "runner_crashed"
	CodeTimeout               Code = "timeout"
	CodeNotFound              Code = "not_found"
	CodeBadRequest            Code = "bad_request"
	CodeConflict              Code = "conflict"
	CodeEngineError           Code = "engine_error"
	CodePermissionUnavailable Code = "permission_unavailable"
	CodeUnavailable           Code = "unavailable"
	CodeStorageUnavailable    Code = "storage_unavailable"
	CodeUnauthorized          Code = "unauthorized"
	CodeForbidden             Code = "forbidden"
	CodeProtocol              Code = "protocol_mismatch"
	CodeInternal              Code = "internal"
)

// Sentinel errors, one per code. errors.Is(err, ErrNotFound) holds for any
// *Error whose Code is CodeNotFound, on either side of a process boundary.
var (
	ErrRunnerCrashed         = &Error{Code: CodeRunnerCrashed, Message: "runner crashed"}
	ErrTimeout               = &Error{Code: CodeTimeout, Message: "timed out"}
	ErrNotFound              = &Error{Code: CodeNotFound, Message: "not found"}
	ErrBadRequest            = &Error{Code: CodeBadRequest, Message: "bad request"}
	ErrConflict              = &Error{Code: CodeConflict, Message: "conflict"}
	ErrEngine                = &Error{Code: CodeEngineError, Message: "engine error"}
	ErrPermissionUnavailable = &Error{Code: CodePermissionUnavailable, Message: "permission unavailable"}
	ErrUnavailable           = &Error{Code: CodeUnavailable, Message: "unavailable"}
	ErrStorageUnavailable    = &Error{Code: CodeStorageUnavailable, Message: "storage unavailable"}
	ErrUnauthorized          = &Error{Code: CodeUnauthorized, Message: "unauthorized"}
	ErrForbidden             = &Error{Code: CodeForbidden, Message: "forbidden"}
	ErrProtocol              = &Error{Code: CodeProtocol, Message: "protocol version mismatch"}
	ErrInternal              = &Error{Code: CodeInternal, Message: "internal error"}
)

// Error is an error as it crosses a process boundary. Detail carries
// code-specific facts (for runner_crashed: exitCode, signal, stderr).
type Error struct {
	Message string `json:"message"`
	Code    Code   `json:"code"`
	Detail  *Crash `json:"detail,omitempty"`
}

// Crash describes how a runner child ended; it rides on runner_crashed errors.
type Crash struct {
	ExitCode int      `json:"exitCode"`
	Signal   string   `json:"signal,omitempty"`
	Stderr   []string `json:"stderr,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error of the same code, so sentinels match
// errors rebuilt from the wire.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf builds an *Error of the given code with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ToError converts any error into its wire form. An *Error anywhere in the
// chain keeps its code; anything else becomes an internal error whose message
// is the full error text.
func ToError(err error) *Error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		out := *we
		// Keep the wrapping context the caller added.
		if msg := err.Error(); msg != we.Error() {
			out.Message = msg
		}
		return &out
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
