// Package runnercmd is the runner program: started by the supervisor with
// --stdio it speaks the wire protocol on stdin and stdout; started by hand it
// runs standalone, driven through the session folder's control.sock (and,
// when stdin is a terminal, by plain lines typed on it, each a send).
//
// Two binaries run it with different engine sets: cmd/runner with the
// built-in engines, and cmd/plugin-runner with plugin engines too, so that
// the common runner does not carry go-plugin's packages (grpc, protobuf)
// into every session's start-up time and memory.
package runnercmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/oklog/run"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// Main runs the runner program called name with the command-line args
// (without the program name) and the engines it can drive, and returns its
// exit status.
func Main(name string, args []string, engines map[string]engine.Factory) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dir := fs.String("session-dir", "", "the session folder (needed, except in print mode, which makes a temporary one, and with --stdio, where a runner without one is a spare)")
	stdio := fs.Bool("stdio", false, "speak the wire protocol on stdin/stdout (how the supervisor starts runners)")
	probe := fs.Bool("probe", false, "check whether sessions on the engines a JSON request on stdin names could start, and answer in JSON on stdout (how the supervisor answers GET /v1/engines)")
	replay := fs.Bool("replay", false, "replay the golden turn of the engine a JSON request on stdin names, on its installed CLI against a fake model, and answer in JSON on stdout (how supervisor doctor engines checks a CLI)")
	termFDs := fs.Int("term-fds", -1, "with --stdio: descriptor of a Unix socket on which to hand terminals over to the supervisor (term.open with export)")
	ownCgroup := fs.Bool("own-cgroup", false, "with --stdio: the runner's cgroup (v2) is its own, a leaf the supervisor made for it: when it stops with no supervisor left, it kills every other process in it")
	grace := fs.Duration("reattach-grace", 0, "with --stdio: when the supervisor goes away, keep a live session running and wait this long for one to re-attach on runner.sock before shutting down (0: shut down at once)")
	spec := wire.Spec{}
	fs.StringVar(&spec.Engine, "engine", "", "engine: "+engineNames(engines))
	fs.StringVar(&spec.Scenario, "scenario", "", "script engine scenario file (default: the built-in demo)")
	fs.StringVar(&spec.Cwd, "cwd", "", "worktree the agent works in (default: the current directory)")
	fs.StringVar(&spec.Mode, "mode", "", "review, auto or readonly (default review)")
	fs.StringVar(&spec.Model, "model", "", "model name")
	fs.StringVar(&spec.ModelEndpoint, "model-endpoint", "", "model API base URL")
	fs.BoolVar(&spec.Unattended, "unattended", false, "never wait for a human: asks fail with permissionUnavailable")
	fs.Float64Var(&spec.SpendCapUSD, "spend-cap", 0, "stop when the session has spent this many USD (0: no cap)")
	prompt := fs.String("p", "", "print mode: run this prompt to its end, print the final answer, exit non-zero on failure")
	stream := fs.Bool("stream", false, "print mode: also stream every event to stderr as NDJSON")
	asJSON := fs.Bool("json", false, `print mode: print one JSON envelope on stdout, {"ok":true,"result":{answer,outcome,failure?}} or {"ok":false,"error":…}`)
	credFile := fs.String("credentials", "", "credentials file (JSON, mode 0600) instead of the OS keyring")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "json", "json (one object a line; what a supervisor reads) or console (for a person)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s -p PROMPT --engine E [...]         (print mode: one prompt, the answer on stdout)\n", name)
		fmt.Fprintf(fs.Output(), "       %s --session-dir DIR --engine E [...]  (one session in DIR)\n", name)
		fmt.Fprintf(fs.Output(), "       %s --stdio [--session-dir DIR]         (how the supervisor starts runners)\n\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *probe {
		return probeMain(engines)
	}
	if *replay {
		return replayMain()
	}
	if *dir == "" && *prompt != "" {
		tmp, err := os.MkdirTemp("", "corral-print-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "runner:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	if *dir == "" && !*stdio {
		fmt.Fprintln(os.Stderr, name+": --session-dir is needed (or -p PROMPT for print mode); see -h")
		return 2
	}
	log, err := newLogger(*level, *format)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 2
	}
	defer log.Sync()
	if spec.Cwd != "" {
		if spec.Cwd, err = filepath.Abs(spec.Cwd); err != nil {
			log.Error("cwd", zap.Error(err))
			return 2
		}
	}
	opts := runner.Options{Spec: spec, Engines: engines, Env: proc.BaseEnv(), Logger: log}
	if *stdio {
		return serveStdio(log, opts, *dir, *termFDs, *grace, *ownCgroup)
	}
	claim, err := claimDir(*dir)
	if err != nil {
		log.Error("session folder", zap.Error(err))
		return 1
	}
	defer claim.release()
	opts.Dir = claim.dir
	if opts.Spec.ID == "" {
		opts.Spec.ID = filepath.Base(claim.dir)
	}
	var store *creds.Store
	if *credFile != "" {
		if store, err = creds.LoadFile(*credFile); err != nil {
			log.Error("credentials", zap.Error(err))
			return 2
		}
	}
	secrets, err := store.All()
	if err != nil {
		log.Warn("no credentials from the keyring", zap.Error(err))
	}
	opts.Credentials = secrets
	if *prompt != "" {
		return printMode(opts, *prompt, *stream, *asJSON)
	}
	return standalone(log, opts)
}

// newLogger logs to stderr. Under a supervisor the format is json: the
// supervisor reads each line and logs it again at its level, in its own
// format, with the session id.
func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	switch format {
	case "json":
	case "console":
		cfg.Encoding = "console"
		cfg.EncoderConfig = zap.NewDevelopmentEncoderConfig()
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	default:
		return nil, fmt.Errorf("--log-format %q: want json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.OutputPaths = []string{"stderr"}
	cfg.Sampling = nil
	return cfg.Build()
}

// replayMain answers one golden replay request (internal/engineprobe).
func replayMain() int {
	ctx, cancel := signalContext()
	defer cancel()
	if err := engineprobe.ServeReplay(ctx, goldenReplays(), proc.BaseEnv(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		return 1
	}
	return 0
}

// probeMain answers one engine probe request (internal/engineprobe).
func probeMain(engines map[string]engine.Factory) int {
	ctx, cancel := signalContext()
	defer cancel()
	if err := engineprobe.Serve(ctx, engines, proc.BaseEnv(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		return 1
	}
	return 0
}

// printMode runs one prompt and prints the final answer, or with asJSON
// the whole result in an envelope.
func printMode(opts runner.Options, prompt string, stream, asJSON bool) int {
	ctx, cancel := signalContext()
	defer cancel()
	var events io.Writer
	if stream {
		events = os.Stderr
	}
	res, err := runner.RunPrint(ctx, opts, prompt, events)
	if asJSON {
		return printEnvelope(res, err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		return 1
	}
	if res.Answer != "" {
		fmt.Println(res.Answer)
	}
	if !res.OK() {
		if res.Failure != nil {
			fmt.Fprintf(os.Stderr, "runner: %s: %s\n", res.Failure.Code, res.Failure.Message)
		} else {
			fmt.Fprintf(os.Stderr, "runner: the turn ended %s\n", res.Outcome)
		}
		return 1
	}
	return 0
}

// printEnvelope prints print mode's end as the CLI's envelope. A run that
// failed is ok:false with the error, and still has its result: the answer
// so far and the failure.
func printEnvelope(res runner.PrintResult, err error) int {
	reply := wire.OKReply(api.RunResult{Answer: res.Answer, Outcome: res.Outcome, Failure: res.Failure})
	switch {
	case err != nil:
		reply = wire.ErrReply(err)
	case !res.OK():
		why := "the turn ended " + res.Outcome
		if res.Failure != nil {
			why = fmt.Sprintf("%s: %s", res.Failure.Code, res.Failure.Message)
		}
		reply.OK, reply.Error = false, wire.Errorf(wire.CodeEngineError, "%s", why)
	}
	raw, _ := json.Marshal(reply)
	fmt.Printf("%s\n", raw)
	if !reply.OK {
		return 1
	}
	return 0
}

// stopSignals end a runner cleanly. SIGHUP is among them also because a
// signal a Go program catches reaches the programs it starts at its
// default: a runner started with SIGHUP ignored (a supervisor run under
// nohup) would otherwise start terminal programs and engine CLIs that
// ignore it too, and a terminal's jobs would outlive the terminal.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), stopSignals...)
}

// standalone runs one session driven through control.sock and, on a
// terminal, by typed lines.
func standalone(log *zap.Logger, opts runner.Options) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := runner.New(opts)
	if err != nil {
		log.Error("open session", zap.Error(err))
		return 1
	}
	if err := r.Start(ctx); err != nil {
		log.Error("start session", zap.Error(err))
		r.Close()
		return 1
	}
	ln, err := runner.ListenControl(opts.Dir)
	if err != nil {
		log.Error("control socket", zap.Error(err))
		r.Close()
		return 1
	}
	fmt.Fprintf(os.Stderr, "runner: session %s on %s; control socket %s\n", r.Spec().ID, r.Spec().Engine, filepath.Join(opts.Dir, runner.ControlSock))
	var g run.Group
	g.Add(func() error { return runner.ServeControl(ctx, ln, r.Do, log) }, func(error) { cancel() })
	g.Add(run.SignalHandler(ctx, stopSignals...))
	if term.IsTerminal(int(os.Stdin.Fd())) {
		g.Add(func() error {
			sc := bufio.NewScanner(os.Stdin)
			for sc.Scan() {
				if line := sc.Text(); line != "" {
					if reply := r.Do(ctx, command.Send{Text: line}); !reply.OK {
						fmt.Fprintln(os.Stderr, "runner:", reply.Error.Message)
					}
				}
			}
			return nil
		}, func(error) { os.Stdin.Close() })
	}
	err = g.Run()
	if cerr := r.Close(); cerr != nil {
		log.Error("close session", zap.Error(cerr))
	}
	var sig run.SignalError
	if err != nil && !errors.As(err, &sig) {
		log.Error("runner", zap.Error(err))
		return 1
	}
	return 0
}
