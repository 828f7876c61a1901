package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	recent   recentCalls
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
			s.respond(m.Reply, encodeReply(nil, wire.Errorf(wire.CodeBadRequest, "node does not serve %q (an older or newer supervisor?)", op), s.f.nc.MaxPayload()))
			return
		}
		timeout := s.f.timing.Request
		if ms, err := strconv.Atoi(m.Header.Get(hdrTimeout)); err == nil && ms > 0 {
			timeout = min(time.Duration(ms)*time.Millisecond, 10*time.Minute)
		}
		id := m.Header.Get(hdrRequestID)
		if id != "" {
			fresh, answer, clash := s.recent.take(id, m.Subject, m.Data, m.Reply, timeout)
			switch {
			case clash:
				s.respond(m.Reply, encodeReply(nil, wire.Errorf(wire.CodeBadRequest, "request id %q is in use by another request", id), s.f.nc.MaxPayload()))
				return
			case answer != nil:
				s.respond(m.Reply, answer)
				return
			case !fresh:
				return // a copy of a request under way: its answer goes to m.Reply
			}
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
			answer := encodeReply(res, err, s.f.nc.MaxPayload())
			replyTo := m.Reply
			if id != "" {
				replyTo = s.recent.done(id, answer)
			}
			s.respond(replyTo, answer)
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

// encodeReply is the answer to a request: its result, or its error.
func encodeReply(res any, err error, maxPayload int64) []byte {
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
	if len(raw) > int(maxPayload) {
		raw, _ = json.Marshal(rpcReply{Error: wire.Errorf(wire.CodeInternal, "reply of %d bytes is over the fabric's limit of %d", len(raw), maxPayload)})
	}
	return raw
}

func (s *rpcServer) respond(replyTo string, answer []byte) {
	if err := s.f.nc.Publish(replyTo, answer); err != nil {
		s.log.Debug("fleet reply not sent", zap.String("subject", replyTo), zap.Error(err))
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
//
// It sends the request again, under the same id, when no answer came
// within the fabric's Resend: the node serving it runs it once and
// answers every copy (rpcrecent.go). A request no node listens for
// (nats.ErrNoResponders) is sent again for up to absentFor: a node whose
// NATS server died is back on another one within a moment, and until
// the cluster has heard of it again nobody listens for its requests.
func (f *Fabric) call(ctx context.Context, node, op string, req, res any, absentFor time.Duration) error {
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
	msg.Header.Set(hdrRequestID, newRequestID())
	start := time.Now()
	backoff := 50 * time.Millisecond
	var m *nats.Msg
	for {
		actx, cancel := context.WithTimeout(ctx, f.timing.Resend)
		m, err = f.nc.RequestMsgWithContext(actx, msg)
		cancel()
		if err == nil {
			break
		}
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return err
		}
		absent := errors.Is(err, nats.ErrNoResponders)
		if absent && time.Since(start) >= absentFor || ctx.Err() != nil {
			return callError(node, op, err, ctx.Err())
		}
		if !resendable(err) {
			return callError(node, op, err, nil)
		}
		if absent || !errors.Is(err, context.DeadlineExceeded) {
			// Not sent, or nobody listens yet: give the link a moment.
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return callError(node, op, err, ctx.Err())
			case <-t.C:
			}
			backoff = min(2*backoff, 500*time.Millisecond)
		}
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

// resendable reports an attempt of a request that may be sent again: no
// answer in time, nobody listening yet, or the link down meanwhile.
func resendable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

// callError is the typed error of a request to node whose last attempt
// failed with err; ctxErr, when not nil, is why the caller stopped trying.
func callError(node, op string, err, ctxErr error) error {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.Errorf(wire.CodeUnavailable, "node %s does not answer (it left the fleet, or is starting)", node)
	case errors.Is(ctxErr, context.Canceled):
		return ctxErr
	case ctxErr != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return wire.Errorf(wire.CodeTimeout, "node %s did not answer %s in time", node, op)
	default:
		return wire.Errorf(wire.CodeUnavailable, "ask node %s: %v", node, err)
	}
}

// newRequestID names a request and its copies: 128 random bits.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
