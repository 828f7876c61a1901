package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/supervisor/daemon"
	"github.com/corral-dev/corral/pkg/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "serve", "", "Run the supervisor daemon until SIGINT or SIGTERM, which stop every runner.")
	var cfg daemon.Config
	var state, level string
	fs.StringVar(&state, "state", "", "state folder (default $CORRAL_STATE, else $XDG_STATE_HOME/corral, else ~/.local/state/corral)")
	fs.StringVar(&cfg.RunnerPath, "runner", "", "runner executable (default: runner next to this program, else on PATH)")
	fs.StringVar(&cfg.PluginRunnerPath, "plugin-runner", "", "runner with plugin engines, for sessions on them (default: plugin-runner next to the runner, else on PATH)")
	fs.BoolVar(&cfg.SpareRunner, "spare-runner", true, "keep a runner started ahead of need, so a new session does not wait for a process to start")
	fs.StringVar(&cfg.ListenTCP, "listen-tcp", "", "also serve on this TCP address (every request needs the bearer token)")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "bearer token file for --listen-tcp (default <state>/token, generated when missing)")
	fs.DurationVar(&cfg.IdleTTL, "idle-ttl", 5*time.Minute, "stop a runner idle this long")
	fs.IntVar(&cfg.MaxLive, "max-live", 64, "most sessions live at once: past it the least recently used idle one is stopped, and with none idle a start fails with 503")
	fs.StringVar(&cfg.CredentialsFile, "credentials", "", "credentials file (mode 0600) handed to runners instead of the keyring")
	fs.StringVar(&cfg.EnginesDir, "engines-dir", os.Getenv("CORRAL_ENGINES_DIR"), "folder of the installed agent CLIs (CORRAL_ENGINES_DIR for runners)")
	fs.StringVar(&level, "log-level", "info", "log level: debug, info, warn or error")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if cfg.IdleTTL <= 0 {
		return usagef("--idle-ttl must be positive")
	}
	if cfg.MaxLive <= 0 {
		return usagef("--max-live must be positive")
	}
	if cfg.StateDir, err = client.StateDir(state); err != nil {
		return err
	}
	log, err := newLogger(level)
	if err != nil {
		return usageError{err}
	}
	defer log.Sync()
	cfg.Logger = log
	return daemon.Run(ctx, cfg)
}

// newLogger logs to stderr, in a console format a person can read.
func newLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(strings.ToLower(level))
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), lvl)
	return zap.New(core), nil
}
