package plugin

import (
	"context"
	"fmt"
	"net/rpc"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// remote is the runner's side of one plugin connection: it calls the
// plugin's engine and serves the Host the plugin calls back.
type remote struct {
	broker *goplugin.MuxBroker
	rpc    *rpc.Client
	ids    atomic.Uint64

	host *hostServer
	// serving is the goroutine serving the Host stream.
	serving sync.WaitGroup
}

func (r *remote) nextID() uint64 { return r.ids.Add(1) }

// start serves host on a new broker stream (ending with live) and starts
// the plugin's conversation.
func (r *remote) start(ctx, live context.Context, opts engine.StartOptions, log *zap.Logger) (string, Capabilities, error) {
	r.host = &hostServer{host: opts.Host, live: live, calls: newCalls(), log: log}
	stream := r.broker.NextId()
	r.serving.Add(1)
	go func() {
		defer r.serving.Done()
		r.broker.AcceptAndServe(stream, r.host)
	}()
	id := r.nextID()
	var reply StartReply
	if err := invoke(ctx, r.rpc, "Plugin.Start", id, StartArgs{Call: id, HostStream: stream, Options: optionsOf(opts)}, &reply); err != nil {
		return "", Capabilities{}, err
	}
	return reply.Conversation, reply.Capabilities, reply.Err.err()
}

func (r *remote) turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	id := r.nextID()
	var reply TurnReply
	if err := invoke(ctx, r.rpc, "Plugin.Turn", id, TurnArgs{Call: id, Input: in}, &reply); err != nil {
		return engine.TurnResult{}, err
	}
	return reply.Result, reply.Err.err()
}

func (r *remote) interrupt(ctx context.Context) error {
	id := r.nextID()
	var reply ErrorReply
	if err := invoke(ctx, r.rpc, "Plugin.Interrupt", id, CallArgs{Call: id}, &reply); err != nil {
		return err
	}
	return reply.Err.err()
}

func (r *remote) steer(ctx context.Context, text string) error {
	id := r.nextID()
	var reply ErrorReply
	if err := invoke(ctx, r.rpc, "Plugin.Steer", id, SteerArgs{Call: id, Text: text}, &reply); err != nil {
		return err
	}
	return reply.Err.err()
}

func (r *remote) fork(ctx context.Context) (string, error) {
	id := r.nextID()
	var reply ForkReply
	if err := invoke(ctx, r.rpc, "Plugin.Fork", id, CallArgs{Call: id}, &reply); err != nil {
		return "", err
	}
	return reply.Conversation, reply.Err.err()
}

func (r *remote) judge(ctx context.Context, prompt string) (string, event.UsageData, error) {
	id := r.nextID()
	var reply JudgeReply
	if err := invoke(ctx, r.rpc, "Plugin.Judge", id, JudgeArgs{Call: id, Prompt: prompt}, &reply); err != nil {
		return "", event.UsageData{}, err
	}
	return reply.Answer, reply.Usage, reply.Err.err()
}

func (r *remote) compact(ctx context.Context) error {
	id := r.nextID()
	var reply ErrorReply
	if err := invoke(ctx, r.rpc, "Plugin.Compact", id, CallArgs{Call: id}, &reply); err != nil {
		return err
	}
	return reply.Err.err()
}

// close asks the plugin to close its engine, waiting at most wait: Close
// takes no context, so there is nothing to cancel.
func (r *remote) close(wait time.Duration) error {
	var reply ErrorReply
	call := r.rpc.Go("Plugin.Close", CallArgs{Call: r.nextID()}, &reply, make(chan *rpc.Call, 1))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-call.Done:
		if err := transportErr(call.Error); err != nil {
			return err
		}
		return reply.Err.err()
	case <-t.C:
		return fmt.Errorf("the plugin did not close its engine within %s", wait)
	}
}

// wait waits, up to d, for the Host stream's server and every Host call in
// progress to end. It reports whether they did.
func (r *remote) wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		r.serving.Wait()
		if r.host != nil {
			r.host.inflight.Wait()
		}
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// hostServer serves the runner's Host to a plugin. Its exported methods
// are the protocol; see protocol.go.
type hostServer struct {
	host engine.Host
	// live ends when the plugin connection is shut down; the contexts of
	// Host calls derive from it, so a Permit waiting for a person ends
	// when its plugin is gone.
	live     context.Context
	calls    *calls
	log      *zap.Logger
	inflight sync.WaitGroup
}

// Emit records an engine event.
func (h *hostServer) Emit(args EmitArgs, reply *bool) error {
	data, err := decodeEvent(args.Type, args.Data)
	if err != nil {
		h.log.Warn("plugin event refused", zap.Error(err))
		return err
	}
	h.host.Emit(args.Type, data)
	*reply = true
	return nil
}

// Permit decides a tool call; it blocks while a person answers.
func (h *hostServer) Permit(args PermitArgs, reply *PermitReply) error {
	if err := validToolCall(args.ToolCall); err != nil {
		h.log.Warn("plugin tool call refused", zap.Error(err))
		return err
	}
	h.inflight.Add(1)
	defer h.inflight.Done()
	ctx, end := h.calls.begin(h.live, args.Call)
	defer end()
	reply.Verdict = h.host.Permit(ctx, args.ToolCall)
	return nil
}

// TakeSteers hands over the steers waiting at a tool boundary.
func (h *hostServer) TakeSteers(args TakeSteersArgs, reply *TakeSteersReply) error {
	reply.Texts = h.host.TakeSteers(args.ToolID)
	return nil
}

// Cancel cancels a Permit in progress.
func (h *hostServer) Cancel(args CancelArgs, reply *bool) error {
	h.calls.cancel(args.Call)
	*reply = true
	return nil
}

// validToolCall checks what the runner relies on: a known kind, and an
// edit proposal on an absolute path.
func validToolCall(c engine.ToolCall) error {
	switch c.Kind {
	case engine.KindShell, engine.KindEdit, engine.KindRead, engine.KindFetch, engine.KindMCP, engine.KindOther:
	default:
		return fmt.Errorf("tool call %s: kind %q is not one of shell, edit, read, fetch, mcp, other", c.ID, c.Kind)
	}
	if c.Edit != nil && (!filepath.IsAbs(c.Edit.Path) || filepath.Clean(c.Edit.Path) != c.Edit.Path) {
		return fmt.Errorf("tool call %s: edit path %q is not a clean absolute path", c.ID, c.Edit.Path)
	}
	return nil
}
