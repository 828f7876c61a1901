// Package engineprobe checks whether sessions on the built-in engines could
// start, in a runner process: the supervisor, which links no engine, starts
// `runner --probe`, writes a Request on its standard input (credentials
// travel there, never on the command line or in the environment) and reads
// a Reply from its standard output. Each engine's own probe
// (engine.Prober) decides what "ready" means for it.
//
// It also holds what the engines' probes share: the check of a credential
// against a model endpoint's list of models.
package engineprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
)

// Flag is the runner's flag that makes it a probe.
const Flag = "--probe"

// Request asks a probe runner about engines.
type Request struct {
	Engines []string `json:"engines"`
	// Config and Credentials are, by engine, the settings a session would
	// get and the secrets it may use.
	Config      map[string]map[string]string `json:"config,omitempty"`
	Credentials map[string]map[string]string `json:"credentials,omitempty"`
	// ModelEndpoint and Accept are engine.ProbeOptions'.
	ModelEndpoint string `json:"modelEndpoint,omitempty"`
	Accept        bool   `json:"accept,omitempty"`
}

// Reply is a probe runner's answer, by engine.
type Reply struct {
	Engines map[string]engine.ProbeResult `json:"engines"`
}

// PerEngine bounds one engine's probe (a first run of an npm CLI unpacks
// it, which takes seconds on a busy machine).
const PerEngine = 60 * time.Second

// maxReply bounds what the supervisor reads from a probe runner.
const maxReply = 1 << 20

// Serve answers one Request read from r with a Reply written to w,
// probing the engines at once, each within PerEngine. An engine that is
// not among engines, or cannot be probed, gets a failed check saying so.
func Serve(ctx context.Context, engines map[string]engine.Factory, env []string, r io.Reader, w io.Writer) error {
	var req Request
	dec := json.NewDecoder(io.LimitReader(r, maxReply))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("probe request: %w", err)
	}
	reply := Reply{Engines: map[string]engine.ProbeResult{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range req.Engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := probeOne(ctx, engines, env, req, name)
			mu.Lock()
			reply.Engines[name] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return json.NewEncoder(w).Encode(reply)
}

func probeOne(ctx context.Context, engines map[string]engine.Factory, env []string, req Request, name string) engine.ProbeResult {
	factory, ok := engines[name]
	if !ok {
		return engine.ProbeResult{Checks: []api.EngineCheck{Failed(engine.CheckCLI, "this runner has no engine %q", name)}}
	}
	eng := factory()
	defer eng.Close()
	p, ok := eng.(engine.Prober)
	if !ok {
		return engine.ProbeResult{Checks: []api.EngineCheck{Skipped(engine.CheckCLI, "the %s engine cannot be checked before a session starts", name)}}
	}
	ctx, cancel := context.WithTimeout(ctx, PerEngine)
	defer cancel()
	config := req.Config[name]
	if config == nil {
		config = map[string]string{}
	}
	res := p.Probe(ctx, engine.ProbeOptions{
		Config: config, Credentials: req.Credentials[name], Env: env,
		ModelEndpoint: req.ModelEndpoint, Accept: req.Accept,
	})
	if res.Checks == nil {
		res.Checks = []api.EngineCheck{}
	}
	return res
}

// Run starts runner as a probe, hands it req and returns its reply. env is
// the runner's whole environment. The runner is killed, with anything it
// started, when ctx ends first.
func Run(ctx context.Context, runner string, env []string, req Request) (Reply, error) {
	var reply Reply
	err := ask(ctx, runner, Flag, "engine probe", env, req, &reply)
	return reply, err
}

// ask starts runner with flag, writes req as JSON on its standard input and
// reads its JSON answer into reply; what names the exchange in errors.
func ask(ctx context.Context, runner, flag, what string, env []string, req, reply any) error {
	in, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, runner, flag)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(in)
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: maxReply}
	stderr := proc.NewTail(20)
	cmd.Stderr = stderr
	proc.ConfigureContext(cmd, time.Second)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		return fmt.Errorf("%s %s: %v: %s", what, runner, err, lastLine(stderr.Lines()))
	}
	if err := json.Unmarshal(out.Bytes(), reply); err != nil {
		return fmt.Errorf("%s %s: its answer is not a %s reply: %w", what, runner, what, err)
	}
	return nil
}

func lastLine(lines []string) string {
	if len(lines) == 0 {
		return "(no output on stderr)"
	}
	return lines[len(lines)-1]
}

// limitedWriter keeps the first n bytes and fails past them.
type limitedWriter struct {
	w io.Writer
	n int
}

var errTooLong = errors.New("probe reply too long")

func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return 0, errTooLong
	}
	l.n -= len(p)
	return l.w.Write(p)
}

// OK, Failed and Skipped build checks.
func OK(name, format string, args ...any) api.EngineCheck {
	return api.EngineCheck{Name: name, Status: api.CheckOK, Detail: fmt.Sprintf(format, args...)}
}

func Failed(name, format string, args ...any) api.EngineCheck {
	return api.EngineCheck{Name: name, Status: api.CheckFailed, Detail: fmt.Sprintf(format, args...)}
}

func Skipped(name, format string, args ...any) api.EngineCheck {
	return api.EngineCheck{Name: name, Status: api.CheckSkipped, Detail: fmt.Sprintf(format, args...)}
}
