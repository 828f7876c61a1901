package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// probe is an engine served in-process that records what reaches it and
// turns with whatever the test scripts. It steers natively.
type probe struct {
	mu      sync.Mutex
	opts    engine.StartOptions
	steered []string

	turn     func(ctx context.Context, host engine.Host) (engine.TurnResult, error)
	steerErr error
}

func (p *probe) Start(_ context.Context, opts engine.StartOptions) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts = opts
	return "probe-" + opts.SessionID, nil
}

func (p *probe) Turn(ctx context.Context, _ engine.TurnInput) (engine.TurnResult, error) {
	p.mu.Lock()
	host := p.opts.Host
	p.mu.Unlock()
	return p.turn(ctx, host)
}

func (p *probe) Interrupt(context.Context) error { return nil }
func (p *probe) Close() error                    { return nil }

func (p *probe) Steer(_ context.Context, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.steerErr != nil {
		return p.steerErr
	}
	p.steered = append(p.steered, text)
	return nil
}

// typedHost records each event with the Go type of its data, as the
// runner's Host switches on it.
type typedHost struct {
	mu      sync.Mutex
	events  []string
	permits int
}

func (h *typedHost) Emit(typ event.Type, data any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, fmt.Sprintf("%s %T", typ, data))
}

func (h *typedHost) Permit(context.Context, engine.ToolCall) engine.Verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.permits++
	return engine.Verdict{Allow: true}
}

func (h *typedHost) TakeSteers(string) []string { return nil }

// inProcess serves eng over an in-memory connection with go-plugin's own
// net/rpc client and server, and starts its conversation with opts.
func inProcess(t *testing.T, eng engine.Engine, opts engine.StartOptions) (*remote, string, Capabilities) {
	t.Helper()
	log := zaptest.NewLogger(t)
	c1, c2 := net.Pipe()
	server := &goplugin.RPCServer{
		Plugins: map[string]goplugin.Plugin{pluginName: &rpcPlugin{factory: func() engine.Engine { return eng }, log: log}},
		Stdout:  strings.NewReader(""),
		Stderr:  strings.NewReader(""),
	}
	served := make(chan struct{})
	go func() {
		server.ServeConn(c2)
		close(served)
	}()
	client, err := goplugin.NewRPCClient(c1, map[string]goplugin.Plugin{pluginName: &rpcPlugin{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.SyncStreams(io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	raw, err := client.Dispense(pluginName)
	if err != nil {
		t.Fatal(err)
	}
	r := raw.(*remote)
	live, endLive := context.WithCancel(context.Background())
	t.Cleanup(func() {
		endLive()
		client.Close()
		<-served
		if !r.wait(waitLimit) {
			t.Error("the host stream did not end")
		}
	})
	opts.Logger = log
	conv, caps, err := r.start(context.Background(), live, opts, log)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return r, conv, caps
}

func TestStartOptionsCrossExceptHostAndLogger(t *testing.T) {
	p := &probe{}
	opts := engine.StartOptions{
		SessionID: "s9", Dir: "/sessions/s9", Cwd: "/work/tree", Model: "m-1", ModelEndpoint: "http://127.0.0.1:9/v1",
		Resume: "conv-1", Scenario: "demo", Credentials: map[string]string{"openai-api-key": "sk-1"},
		Env: []string{"PATH=/usr/bin", "LANG=C"}, Config: map[string]string{"pluginPath": "/opt/p"},
		Host: &typedHost{},
	}
	_, conv, caps := inProcess(t, p, opts)
	if conv != "probe-s9" {
		t.Fatalf("conversation %q", conv)
	}
	if caps != (Capabilities{Steer: true}) {
		t.Fatalf("capabilities %+v, want steering only", caps)
	}
	p.mu.Lock()
	got := p.opts
	p.mu.Unlock()
	if !reflect.DeepEqual(optionsOf(got), optionsOf(opts)) {
		t.Fatalf("the plugin got\n%+v\nwant\n%+v", optionsOf(got), optionsOf(opts))
	}
	if _, ok := got.Host.(*hostClient); !ok || got.Logger == nil {
		t.Fatalf("the plugin's host is %T and logger %v; want its own", got.Host, got.Logger)
	}
}

func TestErrorsKeepWhatCallersBranchOn(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		check func(error) error
	}{
		{"a failure keeps its code, stderr and cause",
			&engine.Failure{Code: event.FailSignInExpired, Message: "sign in again", Stderr: []string{"401"}, Err: errors.New("bad key")},
			func(err error) error {
				var f *engine.Failure
				if !errors.As(err, &f) || f.Code != event.FailSignInExpired || !reflect.DeepEqual(f.Stderr, []string{"401"}) || f.Error() != "sign in again: bad key" {
					return fmt.Errorf("got %#v", err)
				}
				return nil
			}},
		{"an unknown failure code becomes engineError",
			&engine.Failure{Code: "madeUp", Message: "odd"},
			func(err error) error {
				var f *engine.Failure
				if !errors.As(err, &f) || f.Code != event.FailEngineError {
					return fmt.Errorf("got %#v", err)
				}
				return nil
			}},
		{"a context error stays one",
			fmt.Errorf("model call: %w", context.DeadlineExceeded),
			func(err error) error {
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("got %v", err)
				}
				return nil
			}},
		{"a plain error keeps its text and becomes an engineError failure",
			errors.New("disk full"),
			func(err error) error {
				var f *engine.Failure
				if !errors.As(err, &f) || f.Code != event.FailEngineError || !strings.Contains(err.Error(), "disk full") {
					return fmt.Errorf("got %#v", err)
				}
				return nil
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &probe{turn: func(context.Context, engine.Host) (engine.TurnResult, error) { return engine.TurnResult{}, c.err }}
			r, _, _ := inProcess(t, p, engine.StartOptions{SessionID: "s", Host: &typedHost{}})
			_, err := r.turn(context.Background(), engine.TurnInput{Text: "x"})
			if lostConnection(err) {
				t.Fatalf("an engine error looked like a lost connection: %v", err)
			}
			// Engine.Turn wraps what the remote returns the same way.
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				err = asFailure("turn", err)
			}
			if msg := c.check(err); msg != nil {
				t.Fatal(msg)
			}
		})
	}
}

func TestNativeSteerAndNoTurnCrossIntact(t *testing.T) {
	p := &probe{}
	r, _, _ := inProcess(t, p, engine.StartOptions{SessionID: "s", Host: &typedHost{}})
	if err := r.steer(context.Background(), "left, not right"); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	if !reflect.DeepEqual(p.steered, []string{"left, not right"}) {
		t.Fatalf("steered %q", p.steered)
	}
	p.steerErr = engine.ErrNoTurn
	p.mu.Unlock()
	// The runner compares with ==, so the sentinel itself must come back.
	if err := r.steer(context.Background(), "late"); err != engine.ErrNoTurn {
		t.Fatalf("steer without a turn: %v, want engine.ErrNoTurn itself", err)
	}
}

func TestEventsArriveTypedAndForgedOnesAreRefused(t *testing.T) {
	p := &probe{turn: func(_ context.Context, h engine.Host) (engine.TurnResult, error) {
		h.Emit(event.AssistantDelta, event.TextData{Text: "a"})
		h.Emit(event.TurnEnded, event.TurnEndedData{Outcome: "done"})
		h.Emit(event.ToolStarted, event.ToolStartedData{ToolID: "t1"})
		h.Emit(event.Failure, event.FailureData{Code: event.FailSpendCap})
		h.Emit(event.ToolFinished, event.ToolFinishedData{ToolID: "t1"})
		h.Emit(event.Usage, event.UsageData{InputTokens: 3})
		h.Emit(event.Context, event.ContextData{Percent: 5})
		h.Emit(event.Retry, event.RetryData{Attempt: 1})
		h.Emit(event.AssistantText, event.TextData{Text: "a"})
		return engine.TurnResult{Text: "a"}, nil
	}}
	host := &typedHost{}
	r, _, _ := inProcess(t, p, engine.StartOptions{SessionID: "s", Host: host})
	if _, err := r.turn(context.Background(), engine.TurnInput{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"assistantDelta event.TextData", "toolStarted event.ToolStartedData", "toolFinished event.ToolFinishedData",
		"usage event.UsageData", "context event.ContextData", "retry event.RetryData", "assistantText event.TextData",
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	if !reflect.DeepEqual(host.events, want) {
		t.Fatalf("host saw\n%q\nwant\n%q", host.events, want)
	}
}

func TestMalformedToolCallsAreRefusedBeforeTheGate(t *testing.T) {
	cases := []struct {
		name string
		call engine.ToolCall
		want string
	}{
		{"unknown kind", engine.ToolCall{ID: "t1", Kind: "teleport"}, `kind "teleport" is not one of`},
		{"relative edit path", engine.ToolCall{ID: "t2", Kind: engine.KindEdit, Edit: &engine.EditProposal{Path: "notes.txt"}}, "not a clean absolute path"},
		{"unclean edit path", engine.ToolCall{ID: "t3", Kind: engine.KindEdit, Edit: &engine.EditProposal{Path: "/w/../etc/passwd"}}, "not a clean absolute path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v engine.Verdict
			p := &probe{turn: func(ctx context.Context, h engine.Host) (engine.TurnResult, error) {
				v = h.Permit(ctx, c.call)
				return engine.TurnResult{}, nil
			}}
			host := &typedHost{}
			r, _, _ := inProcess(t, p, engine.StartOptions{SessionID: "s", Host: host})
			if _, err := r.turn(context.Background(), engine.TurnInput{Text: "x"}); err != nil {
				t.Fatal(err)
			}
			if v.Allow || !strings.Contains(v.Message, c.want) {
				t.Fatalf("verdict %+v, want a refusal saying %q", v, c.want)
			}
			host.mu.Lock()
			defer host.mu.Unlock()
			if host.permits != 0 {
				t.Fatal("a malformed call reached the runner's gate")
			}
		})
	}
}

func TestStartedClaimsExactlyTheAdvertisedInterfaces(t *testing.T) {
	for bits := 0; bits < 16; bits++ {
		c := Capabilities{Steer: bits&1 != 0, Fork: bits&2 != 0, Judge: bits&4 != 0, Compact: bits&8 != 0}
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			e := New("/nonexistent")
			e.caps = c
			v := e.Started()
			_, s := v.(engine.Steerer)
			_, f := v.(engine.Forker)
			_, j := v.(engine.Judge)
			_, k := v.(engine.Compactor)
			if got := (Capabilities{Steer: s, Fork: f, Judge: j, Compact: k}); got != c {
				t.Fatalf("claims %+v", got)
			}
			if err := v.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCallsCancelBeforeAndAfterBegin(t *testing.T) {
	c := newCalls()
	c.cancel(7) // arrives before its call
	ctx, end := c.begin(context.Background(), 7)
	if ctx.Err() == nil {
		t.Fatal("an early cancel was lost")
	}
	end()
	ctx, end = c.begin(context.Background(), 8)
	defer end()
	if ctx.Err() != nil {
		t.Fatal("a call began cancelled")
	}
	c.cancel(8)
	select {
	case <-ctx.Done():
	case <-time.After(waitLimit):
		t.Fatal("cancel did not reach the call")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.early) != 0 {
		t.Fatalf("tombstones left: %v", c.early)
	}
}
