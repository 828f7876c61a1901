// Package fakemodelcli is the command line of the fake model server:
// "supervisor fakemodel --listen 127.0.0.1:0 --scenario FILE [--log FILE]".
// It prints the URL it listens on as the first line of stdout, so a script
// or test can start it and read where to point an agent CLI, then serves
// until its context is cancelled.
package fakemodelcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-dev/corral/internal/fakemodel"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the server could not start or stopped with an error
	exitUsage = 2 // bad flags or scenario
)

// Main runs the command with args (without the program name) and returns
// its exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakemodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "`address` to listen on; loopback only unless --allow-non-loopback")
	scenarioPath := fs.String("scenario", "", "scenario `file` (JSON); without it every request gets the text \"done\"")
	logPath := fs.String("log", "", "append every request to `file` as JSON lines")
	allowNonLoopback := fs.Bool("allow-non-loopback", false, "allow listening on addresses other than loopback")
	quiet := fs.Bool("quiet", false, "do not log requests to stderr")
	vars := varFlag{}
	fs.Var(vars, "var", "placeholder value `name=value` for ${name} in the scenario; repeatable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fakemodel --listen 127.0.0.1:0 --scenario FILE [--log FILE] [--var name=value]...")
		fmt.Fprintln(stderr, "Serves the Anthropic Messages, OpenAI Responses and Chat Completions APIs from a script;")
		fmt.Fprintln(stderr, "prints its base URL first. See docs/fakemodel.md.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakemodel: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return exitUsage
	}

	scenario := fakemodel.Scenario{Steps: []fakemodel.Step{}}
	if *scenarioPath != "" {
		sc, err := fakemodel.LoadScenario(*scenarioPath)
		if err != nil {
			fmt.Fprintf(stderr, "fakemodel: %v\n", err)
			return exitUsage
		}
		scenario = sc
	}

	logger := zap.NewNop()
	if !*quiet {
		logger = newStderrLogger(stderr)
	}
	opts := []fakemodel.Option{fakemodel.WithLogger(logger), fakemodel.WithVars(vars)}
	if *allowNonLoopback {
		opts = append(opts, fakemodel.AllowNonLoopback())
	}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "fakemodel: open log: %v\n", err)
			return exitError
		}
		defer f.Close()
		opts = append(opts, fakemodel.WithLog(f))
	}

	srv := fakemodel.New(scenario, opts...)
	url, err := srv.Start(ctx, *listen)
	if err != nil {
		fmt.Fprintf(stderr, "fakemodel: %v\n", err)
		if errors.Is(err, fakemodel.ErrNonLoopback) {
			fmt.Fprintln(stderr, "fakemodel: pass --allow-non-loopback to listen there anyway")
			return exitUsage
		}
		return exitError
	}
	if _, err := fmt.Fprintln(stdout, url); err != nil {
		srv.Close()
		fmt.Fprintf(stderr, "fakemodel: write url: %v\n", err)
		return exitError
	}
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "fakemodel: close: %v\n", err)
		return exitError
	}
	return exitOK
}

// varFlag collects repeated --var name=value flags.
type varFlag map[string]string

func (v varFlag) String() string { return "" }

func (v varFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	v[name] = value
	return nil
}

// newStderrLogger logs one human-readable line per request.
func newStderrLogger(w io.Writer) *zap.Logger {
	cfg := zap.NewDevelopmentEncoderConfig()
	cfg.TimeKey = ""
	cfg.CallerKey = ""
	cfg.StacktraceKey = ""
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(cfg), zapcore.Lock(zapcore.AddSync(w)), zapcore.InfoLevel)
	return zap.New(core)
}
