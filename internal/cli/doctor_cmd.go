package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/doctor"
	"github.com/corral-dev/corral/internal/supervisor/daemon"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/wire"
)

func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "doctor", "[engines]", "Check that this machine can run a supervisor: the state folder's owner and mode, free disk, the runner, "+
		"the agent CLIs and their versions, the engines' credentials, the fleet's NATS servers. Prints what to do about each failure; "+
		"exits 1 when a check fails. doctor engines checks the runner and the engines alone, and replays each engine's golden turn "+
		"on its installed CLI against a fake model: the CLI is supported when its protocol is the recorded one, frame by frame.")
	var configFile, state, runner, enginesDir, credentials, engines string
	var natsURLs multi
	fs.StringVar(&configFile, "config", "", "serve's settings file: its state, runner, engines-dir and credentials are checked (flags here win)")
	fs.StringVar(&state, "state", "", "state folder (default as serve's)")
	fs.StringVar(&runner, "runner", "", "runner executable (default: as serve finds it)")
	fs.StringVar(&enginesDir, "engines-dir", "", "folder of the installed agent CLIs (default $CORRAL_ENGINES_DIR)")
	fs.StringVar(&credentials, "credentials", "", "credentials file serve is given (default: the OS keyring)")
	fs.StringVar(&engines, "engines", strings.Join(doctor.KnownEngines(), ","), "comma-separated engines this host runs: each one's CLI and credential must be there (empty: none)")
	fs.Var(&natsURLs, "nats", "a NATS server URL of the fleet to reach (repeatable, or comma-separated)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long a NATS connection may take")
	cliTimeout := fs.Duration("cli-timeout", doctor.DefaultCLITimeout, "how long a CLI's --version, or a golden replay, may take (a first run unpacks an npm CLI: the Copilot CLI's takes a minute or more)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	replay := len(pos) > 0 && pos[0] == "engines"
	if replay {
		pos = pos[1:]
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg := doctor.Config{Timeout: *timeout, CLITimeout: *cliTimeout, Replay: replay, FindRunner: daemon.FindRunner, EnginesDir: os.Getenv("CORRAL_ENGINES_DIR")}
	if configFile != "" {
		o, err := parseServe(&env{stdout: io.Discard, stderr: e.stderr}, []string{"--config", configFile})
		if err != nil {
			return err
		}
		if !set["state"] {
			state = o.state
		}
		cfg.RunnerPath, cfg.EnginesDir, cfg.CredentialsFile = o.cfg.RunnerPath, o.cfg.EnginesDir, o.cfg.CredentialsFile
	}
	if set["runner"] {
		cfg.RunnerPath = runner
	}
	if set["engines-dir"] {
		cfg.EnginesDir = enginesDir
	}
	if set["credentials"] {
		cfg.CredentialsFile = credentials
	}
	if cfg.StateDir, err = client.StateDir(state); err != nil {
		return err
	}
	for _, name := range strings.Split(engines, ",") {
		if name = strings.TrimSpace(name); name != "" {
			cfg.Engines = append(cfg.Engines, name)
		}
	}
	for _, u := range natsURLs {
		for _, one := range strings.Split(u, ",") {
			if one = strings.TrimSpace(one); one != "" {
				cfg.NATS = append(cfg.NATS, one)
			}
		}
	}

	results := doctor.Run(ctx, cfg)
	report := doctorReport{OK: !doctor.Failed(results), Checks: results}
	if !report.OK && e.json {
		// Still the whole report, in an envelope that says it failed.
		reply := wire.OKReply(report)
		reply.OK, reply.Error = false, wire.Errorf(wire.CodeUnavailable, "%d of %d checks failed", failures(results), len(results))
		writeEnvelope(e.stdout, reply)
		return exitStatus(1)
	}
	if err := e.emit(report, func(w io.Writer) error { printResults(w, results); return nil }); err != nil {
		return err
	}
	if !report.OK {
		return exitStatus(1)
	}
	return nil
}

// doctorReport is doctor's result under --json.
type doctorReport struct {
	OK     bool            `json:"ok"`
	Checks []doctor.Result `json:"checks"`
}

func failures(results []doctor.Result) int {
	n := 0
	for _, r := range results {
		if r.Status == doctor.Fail {
			n++
		}
	}
	return n
}

func printResults(w io.Writer, results []doctor.Result) {
	width := 0
	for _, r := range results {
		width = max(width, len(r.Check))
	}
	failures := 0
	for _, r := range results {
		mark := map[doctor.Status]string{doctor.OK: "ok", doctor.Warn: "WARN", doctor.Fail: "FAIL"}[r.Status]
		fmt.Fprintf(w, "%-4s  %-*s  %s\n", mark, width, r.Check, oneLine(r.Detail))
		if r.Fix != "" {
			fmt.Fprintf(w, "      %-*s  fix: %s\n", width, "", r.Fix)
		}
		if r.Status == doctor.Fail {
			failures++
		}
	}
	if failures > 0 {
		fmt.Fprintf(w, "\n%d of %d checks failed.\n", failures, len(results))
	} else {
		fmt.Fprintf(w, "\nAll %d checks passed.\n", len(results))
	}
}
