package plugin

import (
	"context"
	"encoding/json"
	"net/rpc"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// hostClient is the runner's Host as the engine inside a plugin sees it:
// each method is a call back into the runner.
type hostClient struct {
	rpc *rpc.Client
	log *zap.Logger
	ids atomic.Uint64
}

var _ engine.Host = (*hostClient)(nil)

// Emit sends the event synchronously, so events keep the order the engine
// emitted them in.
func (h *hostClient) Emit(typ event.Type, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		h.log.Error("emit: encode event data", zap.String("type", string(typ)), zap.Error(err))
		return
	}
	var ok bool
	if err := h.rpc.Call("Plugin.Emit", EmitArgs{Type: typ, Data: raw}, &ok); err != nil {
		h.log.Warn("emit: the runner did not take the event", zap.String("type", string(typ)), zap.Error(err))
	}
}

// Permit asks the runner and blocks until it decides or ctx ends. A call
// the runner cannot decide is refused, with the reason for the model.
func (h *hostClient) Permit(ctx context.Context, call engine.ToolCall) engine.Verdict {
	id := h.ids.Add(1)
	var reply PermitReply
	if err := invoke(ctx, h.rpc, "Plugin.Permit", id, PermitArgs{Call: id, ToolCall: call}, &reply); err != nil {
		h.log.Warn("permit: no verdict from the runner", zap.String("tool", call.Tool), zap.Error(err))
		return engine.Verdict{Message: "Corral could not decide this tool call: " + err.Error()}
	}
	return reply.Verdict
}

// TakeSteers returns the steers waiting at this tool boundary.
func (h *hostClient) TakeSteers(toolID string) []string {
	var reply TakeSteersReply
	if err := h.rpc.Call("Plugin.TakeSteers", TakeSteersArgs{ToolID: toolID}, &reply); err != nil {
		h.log.Warn("take steers: no answer from the runner", zap.Error(err))
		return nil
	}
	return reply.Texts
}

func (h *hostClient) close() { _ = h.rpc.Close() }
