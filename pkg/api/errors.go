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

// StatusFor maps an error code onto the HTTP status of the answer.
func StatusFor(code wire.Code) int {
	switch code {
	case wire.CodeNotFound:
		return http.StatusNotFound
	case wire.CodeBadRequest:
		return http.StatusBadRequest
	case wire.CodeConflict:
		return http.StatusConflict
	case wire.CodeTimeout:
		return http.StatusGatewayTimeout
	case wire.CodeRunnerCrashed, wire.CodeEngineError, wire.CodeProtocol:
		return http.StatusBadGateway
	case wire.CodePermissionUnavailable, wire.CodeUnavailable:
		return http.StatusServiceUnavailable
	case wire.CodeUnauthorized:
		return http.StatusUnauthorized
	default:
		return http.StatusInternalServerError
	}
}

// CodeFor maps the status of a failed answer whose body says no code (a
// proxy's, say) onto the closest code.
func CodeFor(status int) wire.Code {
	switch status {
	case http.StatusNotFound:
		return wire.CodeNotFound
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge:
		return wire.CodeBadRequest
	case http.StatusUnauthorized, http.StatusForbidden:
		return wire.CodeUnauthorized
	case http.StatusConflict:
		return wire.CodeConflict
	case http.StatusBadGateway:
		return wire.CodeEngineError
	case http.StatusServiceUnavailable:
		return wire.CodeUnavailable
	case http.StatusGatewayTimeout:
		return wire.CodeTimeout
	default:
		return wire.CodeInternal
	}
}
