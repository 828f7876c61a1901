package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// Requests between nodes are NATS request/reply on
// <fleet>.rpc.<node>.<op>: a JSON request, and a JSON reply that is
// either {"ok":true,"result":...} or {"ok":false,"error":{...}} with
// Corral's typed error (pkg/wire), so a caller on another node branches on
// the same codes (errors.Is(err, wire.ErrNotFound)) as a caller of the
// owner itself.

// hdrTimeout carries how long the caller waits, in milliseconds, so the
// serving node gives up when the caller has.
const hdrTimeout = "Corral-Timeout-Ms"

// maxConcurrentRPC bounds the requests one node serves at once; more wait.
const maxConcurrentRPC = 256

type rpcReply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wire.Error     `json:"error,omitempty"`
}

// rpcHandler serves one operation.
type rpcHandler func(ctx context.Context, req json.RawMessage) (any, error)

// rpcServer answers the requests sent to this node.
type rpcServer struct {
	f        *Fabric
	log      *zap.Logger
	handlers map[string]rpcHandler
	sub      *nats.Subscription
	slots    chan struct{}
	base     context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	closing  sync.Once
}

func newRPCServer(f *Fabric, log *zap.Logger) *rpcServer {
	base, stop := context.WithCancel(context.Background())
	return &rpcServer{f: f, log: log, handlers: map[string]rpcHandler{}, slots: make(chan struct{}, maxConcurrentRPC), base: base, stop: stop}
}

// handle registers op's handler; call before serve.
func (s *rpcServer) handle(op string, h rpcHandler) { s.handlers[op] = h }

// serve subscribes to this node's requests.
func (s *rpcServer) serve(node string) error {
	prefix := len(s.f.names.rpc(node, ""))
	sub, err := s.f.nc.Subscribe(s.f.names.rpcAll(node), func(m *nats.Msg) {
		op := m.Subject[prefix:]
		h := s.handlers[op]
		if m.Reply == "" {
			return
		}
		if h == nil {
			s.reply(m, nil, wire.Errorf(wire.CodeBadRequest, "node does not serve %q (an older or newer supervisor?)", op))
			return
		}
		timeout := s.f.timing.Request
		if ms, err := strconv.Atoi(m.Header.Get(hdrTimeout)); err == nil && ms > 0 {
			timeout = min(time.Duration(ms)*time.Millisecond, 10*time.Minute)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			select {
			case s.slots <- struct{}{}:
			case <-s.base.Done():
				return
			}
			defer func() { <-s.slots }()
			ctx, cancel := context.WithTimeout(s.base, timeout)
			defer cancel()
			res, err := h(ctx, m.Data)
			s.reply(m, res, err)
		}()
	})
	if err != nil {
		return fmt.Errorf("fleet: serve requests: %w", err)
	}
	s.sub = sub
	// The servers know of the subscription before the node says it is in
	// the fleet.
	if err := s.f.nc.Flush(); err != nil {
		return fmt.Errorf("fleet: serve requests: %w", err)
	}
	return nil
}

func (s *rpcServer) reply(m *nats.Msg, res any, err error) {
	var r rpcReply
	if err != nil {
		r.Error = wire.ToError(err)
	} else {
		r.OK = true
		if res != nil {
			raw, merr := json.Marshal(res)
			if merr != nil {
				r = rpcReply{Error: wire.Errorf(wire.CodeInternal, "encode reply: %v", merr)}
			} else {
				r.Result = raw
			}
		}
	}
	raw, _ := json.Marshal(r)
	if len(raw) > int(s.f.nc.MaxPayload()) {
		raw, _ = json.Marshal(rpcReply{Error: wire.Errorf(wire.CodeInternal, "reply of %d bytes is over the fabric's limit of %d", len(raw), s.f.nc.MaxPayload())})
	}
	if err := m.Respond(raw); err != nil {
		s.log.Debug("fleet reply not sent", zap.String("subject", m.Subject), zap.Error(err))
	}
}

// close stops serving, cancels the requests under way and waits for them.
func (s *rpcServer) close() {
	s.closing.Do(func() {
		if s.sub != nil {
			s.sub.Unsubscribe()
		}
		s.stop()
		s.wg.Wait()
	})
}

// call sends op to node and decodes its result into res (when not nil).
func (f *Fabric) call(ctx context.Context, node, op string, req, res any) error {
	raw, err := json.Marshal(req)
	if err != nil {
		return wire.Errorf(wire.CodeBadRequest, "encode %s request: %v", op, err)
	}
	timeout := f.timing.Request
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	msg := &nats.Msg{Subject: f.names.rpc(node, op), Data: raw, Header: nats.Header{}}
	msg.Header.Set(hdrTimeout, strconv.FormatInt(max(timeout.Milliseconds(), 1), 10))
	m, err := f.nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.Errorf(wire.CodeUnavailable, "node %s does not answer (it left the fleet, or is starting)", node)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return wire.Errorf(wire.CodeTimeout, "node %s did not answer %s in time", node, op)
	case errors.Is(err, context.Canceled):
		return err
	case err != nil:
		return wire.Errorf(wire.CodeUnavailable, "ask node %s: %v", node, err)
	}
	var r rpcReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return wire.Errorf(wire.CodeProtocol, "node %s answered %s with something unreadable: %v", node, op, err)
	}
	if !r.OK {
		if r.Error == nil {
			return wire.Errorf(wire.CodeInternal, "node %s refused %s without saying why", node, op)
		}
		return r.Error
	}
	if res != nil && len(r.Result) > 0 {
		if err := json.Unmarshal(r.Result, res); err != nil {
			return wire.Errorf(wire.CodeProtocol, "node %s's %s result: %v", node, op, err)
		}
	}
	return nil
}
