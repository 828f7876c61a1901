package command

import (
	"context"

	"github.com/corral-dev/corral/pkg/wire"
)

// MaxRequestIDBytes bounds a command's requestId.
const MaxRequestIDBytes = 128

// A command's requestId is the client's name for one attempt at it: a
// retry with the same requestId gets the first attempt's reply instead of
// acting twice (docs/commands.md, *Retries*). It travels in the command's
// JSON object beside "cmd" ({"cmd":"send","text":"hi","requestId":"r1"}),
// and in Go beside the command, in the context of the call that carries
// it (WithRequestID): it says which attempt this is, not what to do.

type requestIDKey struct{}

// WithRequestID returns ctx carrying requestID for the command sent or
// run with it; an empty requestID leaves ctx as it is.
func WithRequestID(ctx context.Context, requestID string) context.Context {
	if requestID == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, requestID)
}

// RequestIDFrom returns the requestId ctx carries, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// checkRequestID refuses a requestId that is too long or holds a control
// character.
func checkRequestID(id string) error {
	if len(id) > MaxRequestIDBytes {
		return wire.TooLong("requestId", len(id), MaxRequestIDBytes)
	}
	for _, c := range id {
		if c < 0x20 || c == 0x7f {
			return wire.Errorf(wire.CodeBadRequest, "requestId holds a control character")
		}
	}
	return nil
}
