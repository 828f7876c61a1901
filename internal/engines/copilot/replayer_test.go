package copilot

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
)

// replaySession is the session id every transcript uses.
const replaySession = "5e55a0e1-0000-4000-8000-00000000c0de"

type scriptLine struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// replayer plays the CLI's side of a transcript.
type replayer struct {
	t      *testing.T
	in     *jsonrpc.HeaderReader // what the engine sends
	out    *jsonrpc.HeaderWriter // to the engine
	script []scriptLine
	// before runs before the replayer waits for the engine to send a
	// request of method, so a test can make the engine send it (a stop,
	// a steer).
	before func(method string, params json.RawMessage)
	// after runs once the engine has sent the request.
	after func(method string)

	// endsEarly says the engine is meant to stop answering (its CLI
	// dies), so the replay ending short of the script is no error.
	endsEarly bool

	mu       sync.Mutex
	requests []rpcMessage // every request the engine sent
	ids      map[string]json.RawMessage
	done     chan struct{}
}

func (p *replayer) run() {
	defer close(p.done)
	for i, line := range p.script {
		var m rpcMessage
		if err := json.Unmarshal(line.Msg, &m); err != nil {
			p.t.Errorf("script line %d: %v", i+1, err)
			return
		}
		switch {
		case line.Dir == "sdk->cli" && m.Method != "":
			if p.before != nil {
				p.before(m.Method, m.Params)
			}
			got, err := p.await(m.Method)
			if err != nil {
				if p.endsEarly {
					return
				}
				p.t.Errorf("script line %d: waiting for the engine to send %s: %v", i+1, m.Method, err)
				return
			}
			p.ids[string(m.ID)] = got.ID
			if p.after != nil {
				p.after(m.Method)
			}
		case line.Dir == "sdk->cli":
			// The client's notifications carry nothing to replay.
		case m.Method == "" && len(m.ID) > 0:
			id, ok := p.ids[string(m.ID)]
			if !ok {
				p.t.Errorf("script line %d replies to request %s, which the engine never sent", i+1, m.ID)
				return
			}
			m.ID = id
			if err := p.write(m); err != nil {
				p.t.Errorf("script line %d: %v", i+1, err)
				return
			}
		default:
			if err := p.out.Write(line.Msg); err != nil {
				p.t.Errorf("script line %d: %v", i+1, err)
				return
			}
		}
	}
	p.drain()
}

// await reads the engine's messages until a request for method comes;
// any other request is answered as a CLI answers one it no longer holds.
func (p *replayer) await(method string) (rpcMessage, error) {
	for {
		m, err := p.read()
		if err != nil {
			return m, err
		}
		if m.Method == method {
			return m, nil
		}
		p.refuse(m)
	}
}

func (p *replayer) drain() {
	for {
		m, err := p.read()
		if err != nil {
			return
		}
		p.refuse(m)
	}
}

func (p *replayer) read() (rpcMessage, error) {
	body, err := p.in.Read()
	if err != nil {
		return rpcMessage{}, err
	}
	var m rpcMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return m, err
	}
	if m.Method != "" {
		p.mu.Lock()
		p.requests = append(p.requests, m)
		p.mu.Unlock()
	}
	return m, nil
}

// refuse answers a request the script does not expect. The engine may
// already be gone (the test is ending), so a failed write is no error.
func (p *replayer) refuse(m rpcMessage) {
	if m.Method != "" && len(m.ID) > 0 {
		_ = p.write(rpcMessage{ID: m.ID, Result: json.RawMessage(`{"success":false}`)})
	}
}

func (p *replayer) write(m rpcMessage) error {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return p.out.Write(body)
}

// sent returns the engine's requests of method.
func (p *replayer) sent(method string) []rpcMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []rpcMessage
	for _, m := range p.requests {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// replay is an engine wired to a replayer in place of the CLI. The process
// behind it is the test binary idling, so the engine's process handling
// runs for real.
type replay struct {
	eng    *Engine
	cli    *cli
	stderr *proc.Tail // the CLI's stderr as the engine sees it
	host   *enginetest.Host
	p      *replayer
}

func newReplay(t *testing.T, transcript string, decide func(context.Context, engine.ToolCall) engine.Verdict) *replay {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "transcripts", transcript+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var script []scriptLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line scriptLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", transcript, err)
		}
		script = append(script, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	toEngineR, toEngineW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromEngineR, fromEngineW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fakeCLIEnv+"=idle")
	proc.Configure(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	host := enginetest.NewHost(decide)
	e := &Engine{
		host:      host,
		log:       zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		sessionID: replaySession,
		started:   true,
		perms:     map[string]*pendingPermission{},
		set:       settings{cwd: "/src/project"},
	}
	c := &cli{}
	stderr := proc.NewTail(stderrLines)
	opts := childOptions(c, handlers{notify: e.onNotify, gone: e.onGone})
	c.attach(jsonrpc.AdoptChild(cmd, toEngineR, fromEngineW, stderr, opts))
	e.cli = c

	p := &replayer{
		t: t, in: jsonrpc.NewHeaderReader(fromEngineR, 0), out: jsonrpc.NewHeaderWriter(toEngineW),
		script: script, ids: map[string]json.RawMessage{}, done: make(chan struct{}),
	}
	r := &replay{eng: e, cli: c, stderr: stderr, host: host, p: p}
	t.Cleanup(func() {
		toEngineW.Close() // the engine's connection ends
		c.kill()
		<-c.gone
		fromEngineR.Close() // the replayer stops reading
		<-p.done
		e.tasks.Wait()
	})
	return r
}

func (r *replay) start() { go r.p.run() }

func (r *replay) turn(t *testing.T, text string) (engine.TurnResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return r.eng.Turn(ctx, engine.TurnInput{ID: "m1", Text: text, Kind: "send"})
}

// decision is the result the engine sent for a permission request.
func decision(t *testing.T, m rpcMessage) permissionDecision {
	t.Helper()
	var a permissionAnswer
	if err := json.Unmarshal(m.Params, &a); err != nil {
		t.Fatal(err)
	}
	return a.Result
}
