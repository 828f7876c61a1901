package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/corral-dev/corral/internal/metrics"
	"github.com/corral-dev/corral/internal/sdnotify"
	"github.com/corral-dev/corral/internal/supervisor"
	"go.uber.org/zap"
)

// newMetrics returns the supervisor's metrics, whose census is m's, once m
// is set.
func newMetrics(m **supervisor.Manager) *metrics.Metrics {
	return metrics.New(func() metrics.Census {
		c := (*m).Census()
		return metrics.Census{Sessions: c.Sessions, Runners: c.Runners, Spare: c.Spare}
	})
}

// listenMetrics listens on addr for scrapers on this machine: a loopback
// address only, since nothing there asks who is scraping.
func listenMetrics(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--metrics-listen %q: serves without authentication, so only on a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT); scrapers elsewhere use /metrics on --listen with the bearer token", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("--metrics-listen %q resolved to %s, which is not a loopback address", addr, ln.Addr())
	}
	return ln, nil
}

// metricsOnly serves /metrics and nothing else.
func metricsOnly(met *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", met.Handler())
	return mux
}

// watchdog pings the service manager's watchdog every interval while the
// manager answers: a supervisor whose manager is stuck on its lock stops
// pinging, and systemd restarts it.
func watchdog(ctx context.Context, log *zap.Logger, n *sdnotify.Notifier, m *supervisor.Manager) error {
	every := n.WatchdogInterval()
	if every <= 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			m.LiveCount() // takes the manager's lock
			if err := n.Notify(sdnotify.Watchdog); err != nil {
				log.Warn("watchdog ping", zap.Error(err))
			}
		}
	}
}
