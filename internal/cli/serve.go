package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/supervisor/daemon"
	"github.com/corral-dev/corral/internal/supervisor/webauth"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// serveOptions are serve's flags.
type serveOptions struct {
	cfg                  daemon.Config
	state, level, format string
	config               string
	check, stopRunners   bool
	origins, hosts       multi // --allow-origin, --allow-host
	fleet                *fleetOpts
}

// serveFlags defines serve's flags into o. A config file (--config) sets
// the same flags by name, so this is their one definition.
func serveFlags(e *env, o *serveOptions) *flag.FlagSet {
	fs := newFlags(e, "serve", "", "Run the supervisor daemon until SIGINT or SIGTERM; its sessions' runners go on and wait for the next supervisor to re-attach (--runner-grace). SIGHUP reloads --config.")
	cfg := &o.cfg
	fs.StringVar(&o.config, "config", "", "settings file: one flag a line, NAME = VALUE; flags on the command line win over it. SIGHUP reloads its log-level, max-live, allow-origin and allow-host (docs/deploy.md)")
	fs.StringVar(&o.state, "state", "", "state folder (default $CORRAL_STATE, else $XDG_STATE_HOME/corral, else ~/.local/state/corral)")
	fs.StringVar(&cfg.RunnerPath, "runner", "", "runner executable (default: runner next to this program, else on PATH)")
	fs.StringVar(&cfg.PluginRunnerPath, "plugin-runner", "", "runner with plugin engines, for sessions on them (default: plugin-runner next to the runner, else on PATH)")
	fs.BoolVar(&cfg.SpareRunner, "spare-runner", true, "keep a runner started ahead of need, so a new session does not wait for a process to start")
	fs.BoolVar(&cfg.Prewarm, "prewarm", true, "after a session on claude or codex, start the engine's CLI ahead for the next session of the same shape, so its first turn does not wait for the CLI to start (docs/engines.md)")
	fs.StringVar(&cfg.Listen, "listen", "", "also serve on this TCP address, HOST:PORT (every request needs the bearer token, a session cookie or a ticket)")
	fs.StringVar(&cfg.Listen, "listen-tcp", "", "the same as --listen")
	fs.Var(&o.origins, "allow-origin", "a web origin (scheme://host[:port]) whose pages may call the API (repeatable)")
	fs.Var(&o.hosts, "allow-host", "another name the Host header may carry on --listen: NAME (with the listening port) or NAME:PORT (repeatable)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "serve --listen over HTTPS with this certificate (PEM; with --tls-key)")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	fs.IntVar(&cfg.MaxConns, "max-conns", daemon.DefaultMaxConns, "most connections open at once on each listener (at most a quarter of the open-file limit)")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "bearer token file for --listen (default <state>/token, generated when missing)")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "", "also serve /metrics, without authentication, on this loopback address (127.0.0.1:PORT) for a scraper on this machine")
	fs.DurationVar(&cfg.IdleTTL, "idle-ttl", 5*time.Minute, "stop a runner idle this long")
	fs.DurationVar(&cfg.RunnerGrace, "runner-grace", 5*time.Minute, "sessions outlive the supervisor: when it exits or crashes, its runners go on and wait this long for the next supervisor on this state folder to re-attach, then stop")
	fs.BoolVar(&o.stopRunners, "stop-runners-on-exit", false, "stop every runner when the supervisor exits, and have runners die with it (no re-attach)")
	cfg.Cgroups = cgroup.Auto
	fs.Var(&cfg.Cgroups, "cgroups", "put each runner, and all it starts, in a cgroup (v2) of its own, which is swept when the runner ends: auto (where the system allows it, else process groups), off, or required (refuse to start without)")
	fs.Var((*byteSize)(&cfg.RunnerLimits.MemoryMax), "runner-memory-max", "memory.max of each runner's cgroup: bytes, or with K, M, G or T (0: no limit; needs the memory controller, docs/deploy.md)")
	fs.Int64Var(&cfg.RunnerLimits.PidsMax, "runner-pids-max", 0, "pids.max of each runner's cgroup: processes and threads at once (0: no limit; needs the pids controller)")
	fs.Int64Var(&cfg.RunnerLimits.CPUWeight, "runner-cpu-weight", 0, "cpu.weight of each runner's cgroup, 1-10000 (100 is the default share; 0: not set; needs the cpu controller)")
	fs.IntVar(&cfg.MaxLive, "max-live", 64, "most sessions live at once: past it the least recently used idle one is stopped, and with none idle a start fails with 503")
	fs.IntVar(&cfg.MaxWaiting, "max-waiting", 64, "most sessions waiting for a person (an ask, a review) kept live besides --max-live")
	fs.StringVar(&cfg.CredentialsFile, "credentials", "", "credentials file (mode 0600) handed to runners instead of the keyring")
	fs.StringVar(&cfg.EnginesDir, "engines-dir", os.Getenv("CORRAL_ENGINES_DIR"), "folder of the installed agent CLIs (CORRAL_ENGINES_DIR for runners)")
	cfg.EngineDefaults = map[string]wire.EngineConfig{}
	fs.Var(engineDefaults(cfg.EngineDefaults), "engine-config", "ENGINE.KEY=VALUE: a setting every new session on ENGINE gets unless its own engineConfig sets KEY (repeatable; supervisor engines -v lists the keys)")
	fs.StringVar(&o.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&cfg.StorageDir, "storage", "", "folder of the sessions and their workspaces (default: the state folder); supervisors of a fleet that share it take over each other's sessions")
	o.fleet = fleetFlags(fs)
	fs.BoolVar(&o.check, "check", false, "check the settings (command line and --config) and exit: 0 when they are valid, 2 when not")
	fs.StringVar(&o.format, "log-format", "console", "log format: console (for a person) or json (one object a line, for a log collector); runners' lines are logged again in it")
	return fs
}

// parseServe reads serve's settings: the config file's, if --config names
// one, then the command line's over them.
func parseServe(e *env, args []string) (*serveOptions, error) {
	o := &serveOptions{}
	fs := serveFlags(e, o)
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usagef("unexpected argument %q", pos[0])
	}
	if o.config != "" {
		path := o.config
		o = &serveOptions{}
		fs = serveFlags(e, o)
		if err := applyConfigFile(fs, path); err != nil {
			return nil, usageError{err}
		}
		if _, err := parse(fs, args); err != nil {
			return nil, err
		}
	}
	if o.cfg.IdleTTL <= 0 {
		return nil, usagef("--idle-ttl must be positive")
	}
	if o.cfg.RunnerGrace <= 0 && !o.stopRunners {
		return nil, usagef("--runner-grace must be positive (or use --stop-runners-on-exit)")
	}
	if o.stopRunners {
		o.cfg.RunnerGrace = 0
	}
	if err := o.cfg.RunnerLimits.Check(); err != nil {
		return nil, usagef("--runner-*: %v", err)
	}
	if o.cfg.Cgroups == cgroup.Off && len(o.cfg.RunnerLimits.Controllers()) > 0 {
		return nil, usagef("--runner-memory-max, --runner-pids-max and --runner-cpu-weight need cgroups (not --cgroups=off)")
	}
	if o.cfg.MaxLive <= 0 {
		return nil, usagef("--max-live must be positive")
	}
	if o.cfg.MaxWaiting <= 0 {
		return nil, usagef("--max-waiting must be positive")
	}
	if o.cfg.MaxConns <= 0 {
		return nil, usagef("--max-conns must be positive")
	}
	if (o.cfg.TLSCert == "") != (o.cfg.TLSKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	if o.cfg.Listen == "" && (o.cfg.TLSCert != "" || len(o.hosts) > 0) {
		return nil, usagef("--tls-cert and --allow-host need --listen")
	}
	for _, origin := range o.origins {
		if _, err := webauth.ParseOrigin(origin); err != nil {
			return nil, usagef("--allow-origin: %v", err)
		}
	}
	o.cfg.AllowOrigins, o.cfg.AllowHosts = o.origins, o.hosts
	if _, err := parseLevel(o.level); err != nil {
		return nil, usageError{err}
	}
	if o.cfg.Fleet, err = o.fleet.config(); err != nil {
		return nil, err
	}
	return o, nil
}

func runServe(ctx context.Context, e *env, args []string) error {
	o, err := parseServe(e, args)
	if err != nil {
		return err
	}
	cfg := o.cfg
	if cfg.StateDir, err = client.StateDir(o.state); err != nil {
		return err
	}
	log, level, err := newLogger(o.level, o.format)
	if err != nil {
		return usageError{err}
	}
	if o.check {
		fmt.Fprintf(e.stdout, "settings are valid (state %s, max-live %d, log-level %s)\n", cfg.StateDir, cfg.MaxLive, level.Level())
		return nil
	}
	defer log.Sync()
	cfg.Logger, cfg.LogLevel = log, &level
	if o.config != "" {
		cfg.Reload = func() (daemon.Settings, error) { return reloadServe(e, args, o, log) }
	}
	return daemon.Run(ctx, cfg)
}

// reloadServe reads the settings again, as at start, and returns those a
// running supervisor changes; changes to the others are logged as needing
// a restart.
func reloadServe(e *env, args []string, running *serveOptions, log *zap.Logger) (daemon.Settings, error) {
	quiet := &env{stdout: e.stdout, stderr: discard{}}
	o, err := parseServe(quiet, args)
	if err != nil {
		return daemon.Settings{}, err
	}
	for _, c := range []struct {
		flag     string
		was, now any
	}{
		{"state", running.state, o.state}, {"runner", running.cfg.RunnerPath, o.cfg.RunnerPath},
		{"plugin-runner", running.cfg.PluginRunnerPath, o.cfg.PluginRunnerPath},
		{"spare-runner", running.cfg.SpareRunner, o.cfg.SpareRunner}, {"prewarm", running.cfg.Prewarm, o.cfg.Prewarm},
		{"listen", running.cfg.Listen, o.cfg.Listen}, {"token-file", running.cfg.TokenFile, o.cfg.TokenFile},
		{"tls-cert", running.cfg.TLSCert, o.cfg.TLSCert}, {"tls-key", running.cfg.TLSKey, o.cfg.TLSKey},
		{"max-conns", running.cfg.MaxConns, o.cfg.MaxConns},
		{"metrics-listen", running.cfg.MetricsListen, o.cfg.MetricsListen},
		{"idle-ttl", running.cfg.IdleTTL, o.cfg.IdleTTL}, {"credentials", running.cfg.CredentialsFile, o.cfg.CredentialsFile},
		{"runner-grace", running.cfg.RunnerGrace, o.cfg.RunnerGrace},
		{"engines-dir", running.cfg.EnginesDir, o.cfg.EnginesDir}, {"log-format", running.format, o.format},
		{"engine-config", engineDefaults(running.cfg.EngineDefaults).String(), engineDefaults(o.cfg.EngineDefaults).String()},
	} {
		if c.was != c.now {
			log.Warn("a changed setting takes effect only at a restart", zap.String("setting", c.flag), zap.Any("running", c.was), zap.Any("file", c.now))
		}
	}
	lvl, _ := parseLevel(o.level)
	return daemon.Settings{LogLevel: lvl, MaxLive: o.cfg.MaxLive, AllowOrigins: o.cfg.AllowOrigins, AllowHosts: o.cfg.AllowHosts}, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func parseLevel(level string) (zapcore.Level, error) {
	lvl, err := zapcore.ParseLevel(strings.ToLower(level))
	if err != nil || lvl < zapcore.DebugLevel || lvl > zapcore.ErrorLevel {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return lvl, nil
}

// newLogger logs to stderr, in a console format a person can read or in
// JSON, one object a line, at a level that can change while it runs.
func newLogger(level, format string) (*zap.Logger, zap.AtomicLevel, error) {
	lvl, err := parseLevel(level)
	if err != nil {
		return nil, zap.AtomicLevel{}, err
	}
	atomic := zap.NewAtomicLevelAt(lvl)
	var enc zapcore.Encoder
	switch format {
	case "console":
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewConsoleEncoder(cfg)
	case "json":
		cfg := zap.NewProductionEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(cfg)
	default:
		return nil, zap.AtomicLevel{}, fmt.Errorf("--log-format %q: want console or json", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), atomic)), atomic, nil
}

// byteSize is a flag of a size in bytes, with an optional K, M, G or T.
type byteSize int64

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Set(s string) error {
	if strings.TrimSpace(s) == "0" {
		*b = 0
		return nil
	}
	v, err := cgroup.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}
