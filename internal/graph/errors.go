package graph

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/pkg/wire"
)

// Code is the stable class of a graph error. Callers branch on it; the
// transports carry it next to the wire code it maps to (WireCode).
type Code string

// Graph error codes. docs/graph.md lists them with their meaning.
const (
	CodeUnknownRun   Code = "unknown_run"   // no run of that id
	CodeUnknownNode  Code = "unknown_node"  // no node of that id in the run
	CodeDepsUnmet    Code = "deps_unmet"    // a deps or after edge is not satisfied yet
	CodeNodeFinished Code = "node_finished" // the node has finished (or was retired)
	CodeNodeRunning  Code = "node_running"  // a live claim holds the node
	CodeSuperseded   Code = "superseded"    // the caller's ticket no longer holds the node
	CodeNothingRetry Code = "nothing_to_retry"
	CodeRunEnded     Code = "run_ended"   // the run is complete or blocked
	CodeBadSpec      Code = "bad_spec"    // a spec with bad ids, dangling edges or a cycle
	CodeBadResult    Code = "bad_result"  // a node result that does not fit its stage
	CodeBadRequest   Code = "bad_request" // a malformed request
	CodeRunExists    Code = "run_exists"  // graph_open with the id of an existing run
	CodeLockTimeout  Code = "lock_timeout"
	CodeStoreDamaged Code = "store_damaged" // a run file that cannot be read
	CodeStoreVersion Code = "store_version" // a run file of a newer format
)

// Error is a graph error: a code, a message for people, and the node it is
// about when there is one.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Node    string `json:"node,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is matches another *Error of the same code, so sentinels work with
// errors.Is, and the wire sentinel of the code's class.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *Error:
		return t.Code == e.Code
	case *wire.Error:
		return t.Code == e.WireCode()
	}
	return false
}

// WireCode maps the graph code onto the supervisor's error classes, for
// HTTP statuses and for callers that only know those.
func (e *Error) WireCode() wire.Code {
	switch e.Code {
	case CodeUnknownRun, CodeUnknownNode:
		return wire.CodeNotFound
	case CodeDepsUnmet, CodeNodeFinished, CodeNodeRunning, CodeSuperseded, CodeNothingRetry, CodeRunEnded, CodeRunExists:
		return wire.CodeConflict
	case CodeBadSpec, CodeBadResult, CodeBadRequest:
		return wire.CodeBadRequest
	case CodeLockTimeout:
		return wire.CodeTimeout
	default:
		return wire.CodeInternal
	}
}

// Errorf builds an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func nodeErrorf(code Code, node, format string, args ...any) *Error {
	return &Error{Code: code, Node: node, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the graph code of err: its own when it is (or wraps) an
// *Error, else one derived from a wire error, else "internal".
func CodeOf(err error) Code {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return Code(we.Code)
	}
	return "internal"
}
