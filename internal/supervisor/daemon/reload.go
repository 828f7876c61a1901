package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/corral-dev/corral/internal/metrics"
	"github.com/corral-dev/corral/internal/sdnotify"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/webauth"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Settings are what a running supervisor changes on SIGHUP, without a
// restart.
type Settings struct {
	// LogLevel is the supervisor's log level; runners started from then
	// on log at it too.
	LogLevel zapcore.Level
	// MaxLive caps the live sessions; lowered, quiet runners past it are
	// stopped (supervisor.Manager.SetMaxLive).
	MaxLive int
	// AllowOrigins and AllowHosts replace serve's --allow-origin and
	// --allow-host for every listener from the next request on.
	AllowOrigins, AllowHosts []string
}

// reloader applies Settings on SIGHUP.
type reloader struct {
	log     *zap.Logger
	level   *zap.AtomicLevel // nil: the level is not ours to change
	load    func() (Settings, error)
	m       *supervisor.Manager
	auth    *webauth.Authority
	met     *metrics.Metrics
	notify  *sdnotify.Notifier
	signals chan os.Signal
}

// listen catches SIGHUP until stop is called: without it, SIGHUP would
// kill the supervisor.
func (r *reloader) listen() (stop func()) {
	r.signals = make(chan os.Signal, 1)
	signal.Notify(r.signals, syscall.SIGHUP)
	return func() { signal.Stop(r.signals) }
}

// run reloads at each SIGHUP until ctx ends.
func (r *reloader) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.signals:
			r.reload(ctx)
		}
	}
}

// reload reads the settings and applies them. Settings that cannot be read
// change nothing: the supervisor runs on as it was.
func (r *reloader) reload(ctx context.Context) {
	if r.load == nil {
		r.log.Warn("SIGHUP: nothing to reload (the supervisor was started without --config)")
		return
	}
	if err := r.notify.Reload(); err != nil {
		r.log.Warn("telling the service manager", zap.Error(err))
	}
	defer func() {
		if err := r.notify.Notify(sdnotify.Ready); err != nil {
			r.log.Warn("telling the service manager", zap.Error(err))
		}
	}()
	s, err := r.load()
	if err != nil {
		r.log.Error("SIGHUP: settings not reloaded; running on as before", zap.Error(err))
		return
	}
	if r.level != nil && r.level.Level() != s.LogLevel {
		r.log.Info("log level changed", zap.Stringer("from", r.level.Level()), zap.Stringer("to", s.LogLevel))
		r.level.SetLevel(s.LogLevel)
	}
	if old := r.m.MaxLive(); old != s.MaxLive {
		r.log.Info("max live sessions changed", zap.Int("from", old), zap.Int("to", s.MaxLive))
		if err := r.m.SetMaxLive(s.MaxLive); err != nil {
			r.log.Error("applying --max-live", zap.Error(err))
		}
		r.met.SetMaxLive(r.m.MaxLive())
	}
	if err := r.auth.SetAllowed(s.AllowOrigins, s.AllowHosts); err != nil {
		r.log.Error("applying --allow-origin and --allow-host; the allowed origins and hosts are as before", zap.Error(err))
	}
	r.log.Info("settings reloaded")
}
