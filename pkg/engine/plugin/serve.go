package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-dev/corral/pkg/engine"
)

// Serve serves the engines factory builds as a Corral engine plugin: one
// engine per session the runner starts. A plugin binary's main calls it; it
// returns once the runner has closed the plugin, after closing any engine
// still open. Run by hand, the binary says it is a plugin and exits with
// status 1.
//
// The engine's StartOptions.Logger writes to the plugin's stderr, which the
// runner keeps as the crash tail of a failed turn.
func Serve(factory engine.Factory) {
	// go-plugin swaps os.Stderr for a stream over the connection once it
	// serves; log to the process's own stderr, which survives a crash.
	stderr := os.Stderr
	log := newPluginLogger(stderr)
	p := &rpcPlugin{factory: factory, log: log}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  Handshake(),
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {pluginName: p}},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "go-plugin", Level: hclog.Warn, Output: stderr}),
	})
	p.closeAll()
	_ = log.Sync()
}

// newPluginLogger logs readable lines at info and above to w.
func newPluginLogger(w io.Writer) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), zapcore.InfoLevel)
	return zap.New(core).Named("plugin")
}

// rpcPlugin is the go-plugin Plugin of a Corral engine: the plugin side
// serves an engine built by factory, the runner side gets a *remote.
type rpcPlugin struct {
	factory engine.Factory // nil on the runner side
	log     *zap.Logger

	mu      sync.Mutex
	servers []*server
}

func (p *rpcPlugin) Server(b *goplugin.MuxBroker) (any, error) {
	if p.factory == nil {
		return nil, errors.New("this side of the connection serves no engine")
	}
	s := newServer(b, p.factory, p.log)
	p.mu.Lock()
	p.servers = append(p.servers, s)
	p.mu.Unlock()
	return s, nil
}

func (p *rpcPlugin) Client(b *goplugin.MuxBroker, c *rpc.Client) (any, error) {
	return &remote{broker: b, rpc: c}, nil
}

// closeAll closes the engines of sessions the runner did not close.
func (p *rpcPlugin) closeAll() {
	p.mu.Lock()
	servers := p.servers
	p.servers = nil
	p.mu.Unlock()
	for _, s := range servers {
		s.shutdown()
	}
}

// server is the plugin's side of one session: the RPC service the runner
// calls. Its exported methods are the protocol; see protocol.go.
type server struct {
	broker  *goplugin.MuxBroker
	factory engine.Factory
	log     *zap.Logger
	calls   *calls
	// ctx lives until Close; every call's context derives from it.
	ctx  context.Context
	stop context.CancelFunc

	mu       sync.Mutex
	starting bool
	closed   bool
	eng      engine.Engine
	host     *hostClient
}

func newServer(b *goplugin.MuxBroker, factory engine.Factory, log *zap.Logger) *server {
	ctx, stop := context.WithCancel(context.Background())
	return &server{broker: b, factory: factory, log: log, calls: newCalls(), ctx: ctx, stop: stop}
}

// Start connects back to the runner's Host, builds the engine and starts
// the conversation.
func (s *server) Start(args StartArgs, reply *StartReply) error {
	s.mu.Lock()
	if s.starting || s.closed {
		s.mu.Unlock()
		reply.Err = encodeError(errors.New("plugin protocol: Start may be called once per session"))
		return nil
	}
	s.starting = true
	s.mu.Unlock()

	conn, err := s.broker.Dial(args.HostStream)
	if err != nil {
		return fmt.Errorf("connect to the runner's host: %w", err)
	}
	host := &hostClient{rpc: rpc.NewClient(conn), log: s.log}
	opts := args.Options.startOptions()
	opts.Host = host
	opts.Logger = s.log.Named("engine")
	ctx, end := s.calls.begin(s.ctx, args.Call)
	defer end()
	s.log.Info("starting the conversation", zap.String("session", opts.SessionID), zap.String("resume", opts.Resume))
	eng := s.factory()
	conv, err := eng.Start(ctx, opts)
	if err != nil {
		s.log.Error("start failed", zap.Error(err))
		_ = eng.Close()
		host.close()
		reply.Err = encodeError(err)
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = eng.Close()
		host.close()
		reply.Err = encodeError(errors.New("plugin protocol: the session was closed while it started"))
		return nil
	}
	s.eng, s.host = eng, host
	s.mu.Unlock()
	reply.Conversation = conv
	reply.Capabilities = capabilitiesOf(eng)
	return nil
}

// engine returns the started engine, or an error naming the early call.
func (s *server) engine(method string) (engine.Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("plugin protocol: %s after Close", method)
	case s.eng == nil:
		return nil, fmt.Errorf("plugin protocol: %s before Start", method)
	}
	return s.eng, nil
}

// Turn runs one turn.
func (s *server) Turn(args TurnArgs, reply *TurnReply) error {
	eng, err := s.engine("Turn")
	if err != nil {
		reply.Err = encodeError(err)
		return nil
	}
	ctx, end := s.calls.begin(s.ctx, args.Call)
	defer end()
	s.log.Info("turn started", zap.String("message", args.Input.ID))
	res, err := eng.Turn(ctx, args.Input)
	s.log.Info("turn ended", zap.String("message", args.Input.ID), zap.Bool("stopped", res.Stopped), zap.Error(err))
	reply.Result, reply.Err = res, encodeError(err)
	return nil
}

// Interrupt stops the running turn.
func (s *server) Interrupt(args CallArgs, reply *ErrorReply) error {
	eng, err := s.engine("Interrupt")
	if err != nil {
		reply.Err = encodeError(err)
		return nil
	}
	ctx, end := s.calls.begin(s.ctx, args.Call)
	defer end()
	reply.Err = encodeError(eng.Interrupt(ctx))
	return nil
}

// Steer delivers a steer natively.
func (s *server) Steer(args SteerArgs, reply *ErrorReply) error {
	eng, err := s.engine("Steer")
	if err != nil {
		reply.Err = encodeError(err)
		return nil
	}
	st, ok := eng.(engine.Steerer)
	if !ok {
		reply.Err = encodeError(errors.New("plugin protocol: this engine does not steer natively"))
		return nil
	}
	ctx, end := s.calls.begin(s.ctx, args.Call)
	defer end()
	reply.Err = encodeError(st.Steer(ctx, args.Text))
	return nil
}

// Fork branches the conversation.
func (s *server) Fork(args CallArgs, reply *ForkReply) error {
	eng, err := s.engine("Fork")
	if err != nil {
		reply.Err = encodeError(err)
		return nil
	}
	f, ok := eng.(engine.Forker)
	if !ok {
		reply.Err = encodeError(errors.New("plugin protocol: this engine cannot fork"))
		return nil
	}
	ctx, end := s.calls.begin(s.ctx, args.Call)
	defer end()
	conv, err := f.Fork(ctx)
	reply.Conversation, reply.Err = conv, encodeError(err)
	return nil
}

// Judge answers a side question.
func (s *server) Judge(args JudgeArgs, reply *JudgeReply) error {
	eng, err := s.engine("Judge")
	if err != nil {
		reply.Err = encodeError(err)
		return nil
	}
	j, ok := eng.(engine.Judge)
	if !ok {
		reply.Err = encodeError(errors.New("plugin protocol: this engine has no judge"))
		return nil
	}
	ctx, end := s.calls.begin(s.ctx, args.Call)
	defer end()
	answer, usage, err := j.Judge(ctx, args.Prompt)
	reply.Answer, reply.Usage, reply.Err = answer, usage, encodeError(err)
	return nil
}

// Compact compacts the conversation.
func (s *server) Compact(args CallArgs, reply *ErrorReply) error {
	eng, err := s.engine("Compact")
	if err != nil {
		reply.Err = encodeError(err)
		return nil
	}
	c, ok := eng.(engine.Compactor)
	if !ok {
		reply.Err = encodeError(errors.New("plugin protocol: this engine cannot compact"))
		return nil
	}
	ctx, end := s.calls.begin(s.ctx, args.Call)
	defer end()
	reply.Err = encodeError(c.Compact(ctx))
	return nil
}

// Close ends the conversation and releases the engine's processes.
func (s *server) Close(_ CallArgs, reply *ErrorReply) error {
	reply.Err = encodeError(s.shutdown())
	return nil
}

// Cancel cancels the context of a call in progress.
func (s *server) Cancel(args CancelArgs, reply *bool) error {
	s.calls.cancel(args.Call)
	*reply = true
	return nil
}

// shutdown closes the engine once; every call in progress sees its
// context end.
func (s *server) shutdown() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	eng, host := s.eng, s.host
	s.mu.Unlock()
	s.stop()
	var err error
	if eng != nil {
		err = eng.Close()
		s.log.Info("conversation closed", zap.Error(err))
	}
	if host != nil {
		host.close()
	}
	return err
}
