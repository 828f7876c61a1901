package api

import (
	"net/http"

	"github.com/corral-dev/corral/pkg/wire"
)

// Error codes travel without an HTTP status everywhere but here: the API
// server maps a code onto its status when it answers (StatusFor), and the
// client (pkg/client) maps a status back onto a code when a failed answer has no body
// it can read (CodeFor). Like containerd's errdefs, the error classes are
// transport-free and each transport maps them once, at its edge.

// Error is an error as the HTTP API answers it: the error's code and
// message, and the HTTP status of the answer.
type Error struct {
	Message    string      `json:"message"`
	Code       wire.Code   `json:"code"`
	StatusCode int         `json:"statusCode"`
	Detail     *wire.Crash `json:"detail,omitempty"`
}

// ErrorReply is the body of every failed answer:
// {"ok":false,"error":{...}}.
type ErrorReply struct {
	OK    bool   `json:"ok"`
	Error *Error `json:"error"`
}

// NewError is err as the API answers it, with the status of its code (an
// error without one is internal).
func NewError(err error) *Error {
	if err == nil {
		return nil
	}
	e := wire.ToError(err)
	return &Error{Message: e.Message, Code: e.Code, StatusCode: StatusFor(e.Code), Detail: e.Detail}
}

// Wire is the error without its HTTP status, for callers that branch with
// errors.Is on the pkg/wire sentinels.
func (e *Error) Wire() *wire.Error {
	return &wire.Error{Message: e.Message, Code: e.Code, Detail: e.Detail}
}

// statuses is the HTTP status of each code's answer (docs/wire.md,
// *Errors*): the one table both directions read.
var statuses = map[wire.Code]int{
	wire.CodeBadRequest:            http.StatusBadRequest,
	wire.CodeUnauthorized:          http.StatusUnauthorized,
	wire.CodeForbidden:             http.StatusForbidden,
	wire.CodeNotFound:              http.StatusNotFound,
	wire.CodeConflict:              http.StatusConflict,
	wire.CodeInternal:              http.StatusInternalServerError,
	wire.CodeRunnerCrashed:         http.StatusBadGateway,
	wire.CodeEngineError:           http.StatusBadGateway,
	wire.CodeProtocol:              http.StatusBadGateway,
	wire.CodePermissionUnavailable: http.StatusServiceUnavailable,
	wire.CodeUnavailable:           http.StatusServiceUnavailable,
	wire.CodeStorageUnavailable:    http.StatusInsufficientStorage,
	wire.CodeTimeout:               http.StatusGatewayTimeout,
}

// StatusFor maps an error code onto the HTTP status of the answer; a code
// it does not know is internal.
func StatusFor(code wire.Code) int {
	if status, ok := statuses[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// CodeFor maps the status of a failed answer whose body says no code (a
// proxy's, say) onto its code when only one code answers with it (503 is
// unavailable's: permission_unavailable always comes with a body), and
// onto internal when several do (502) or none.
func CodeFor(status int) wire.Code {
	switch status {
	case http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge:
		return wire.CodeBadRequest
	case http.StatusServiceUnavailable:
		return wire.CodeUnavailable
	}
	found := wire.CodeInternal
	n := 0
	for code, s := range statuses {
		if s == status {
			found, n = code, n+1
		}
	}
	if n != 1 {
		return wire.CodeInternal
	}
	return found
}
