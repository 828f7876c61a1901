// Package metrics keeps a supervisor's Prometheus metrics: sessions by
// state, live runners, session start latency, events mirrored, gate and
// hunk decisions, engine failures, spend, and the fleet's NATS link. They
// are derived from what the supervisor already sees (mirrored event lines,
// runner starts and exits, its own census of sessions), in a registry of
// their own, and served in the Prometheus text format by Handler.
// docs/deploy.md lists every metric and its labels.
package metrics

import (
	"errors"
	"net/http"
	"time"

	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "corral"

// LinkState is the state of a supervisor's link to its fleet's NATS
// servers, as the corral_nats_link_state gauge shows it.
type LinkState int

// Link states.
const (
	// LinkNone: the supervisor is not in a fleet (no --nats).
	LinkNone LinkState = 0
	// LinkConnected: connected to a NATS server.
	LinkConnected LinkState = 1
	// LinkReconnecting: the connection dropped; retrying.
	LinkReconnecting LinkState = 2
	// LinkClosed: given up; the node is out of the fleet.
	LinkClosed LinkState = 3
)

// Census is what the supervisor counts at each scrape: sessions by state
// (every state it knows, at 0 when no session is in it, so that a
// dashboard's series do not come and go) and runners.
type Census struct {
	Sessions map[wire.State]int
	Runners  int
	Spare    int
}

// Metrics is one supervisor's metrics. Its methods are safe for concurrent
// use.
type Metrics struct {
	reg *prometheus.Registry

	events      *eventCounters
	startTime   *prometheus.HistogramVec
	startFailed *prometheus.CounterVec
	crashes     prometheus.Counter
	gateAsks    *prometheus.CounterVec
	gateDecided *prometheus.CounterVec
	hunks       *prometheus.CounterVec
	failures    *prometheus.CounterVec
	turns       *prometheus.CounterVec
	spend       *prometheus.CounterVec
	tokens      *prometheus.CounterVec
	natsLink    prometheus.Gauge
	maxLive     prometheus.Gauge

	// engines and models bound the label values taken from sessions'
	// specs and from model replies.
	engines, models *boundedLabels
	asks            *askCategories
}

// New returns metrics in a registry of their own, with the Go runtime's and
// the process's metrics beside them. census is called at every scrape.
func New(census func() Census) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg:     reg,
		engines: newBoundedLabels(maxEngineLabels),
		models:  newBoundedLabels(maxModelLabels),
		asks:    newAskCategories(),
	}
	f := factory{reg}
	m.events = newEventCounters(f.counterVec("events_total",
		"Session events mirrored from runners, by type (rate() of it is events per second).", "type"))
	m.startTime = f.histogramVec("session_start_seconds",
		"Time to make a session live: from needing its runner to the runner reporting it live; runner is spare when it opened in the spare runner, new when a runner was started for it.",
		startBuckets, "runner")
	m.startFailed = f.counterVec("session_start_failures_total",
		"Sessions whose runner failed to start or to open them, by error code.", "code")
	m.crashes = f.counter("runner_crashes_total", "Session runners that exited without being asked to.")
	m.gateAsks = f.counterVec("gate_asks_total",
		"Tool calls the permission gate asked a person about, by category.", "category")
	m.gateDecided = f.counterVec("gate_decisions_total",
		"Decisions on tool calls: those the gate asked about, by decision, the call's category and who decided; calls refused because the session is unattended (decision deny, by unattended); and calls the gate's rules decided alone (by rule).",
		"decision", "category", "by")
	m.hunks = f.counterVec("hunk_decisions_total", "Staged hunks accepted or rejected, by decision and who decided.", "decision", "by")
	m.failures = f.counterVec("engine_failures_total", "Failure events, by engine and failure code.", "engine", "code")
	m.turns = f.counterVec("turns_total", "Turns ended, by engine and outcome.", "engine", "outcome")
	m.spend = f.counterVec("spend_usd_total", "Money spent on model calls in US dollars, as usage events report it, by engine and model.", "engine", "model")
	m.tokens = f.counterVec("tokens_total", "Model tokens, by engine, model and kind (input, output, cacheRead, cacheWrite).", "engine", "model", "kind")
	m.natsLink = f.gauge("nats_link_state", "The link to the fleet's NATS servers: 0 not in a fleet, 1 connected, 2 reconnecting, 3 closed.")
	m.maxLive = f.gauge("max_live_sessions", "The cap on live sessions (--max-live), as last set or reloaded.")

	info := buildinfo.Read()
	build := f.gaugeVec("build_info", "The supervisor's build: always 1, with its version, VCS revision and Go version.", "version", "revision", "goversion")
	build.WithLabelValues(info.Version, info.Revision, info.GoVersion).Set(1)

	reg.MustRegister(
		newCensusCollector(census),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Handler serves the metrics in the Prometheus text format (or OpenMetrics,
// when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:          m.reg,
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// Registry is where the metrics are kept, for a fleet that adds its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetNATSLink records the state of the fleet's NATS link.
func (m *Metrics) SetNATSLink(s LinkState) { m.natsLink.Set(float64(s)) }

// SetMaxLive records the cap on live sessions.
func (m *Metrics) SetMaxLive(n int) { m.maxLive.Set(float64(n)) }

// SessionStart records a session start (supervisor.Observer).
func (m *Metrics) SessionStart(took time.Duration, spare bool, err error) {
	if err != nil {
		m.startFailed.WithLabelValues(errorCode(err)).Inc()
		return
	}
	runner := "new"
	if spare {
		runner = "spare"
	}
	m.startTime.WithLabelValues(runner).Observe(took.Seconds())
}

// RunnerExit records a session runner's exit (supervisor.Observer).
func (m *Metrics) RunnerExit(crashed bool) {
	if crashed {
		m.crashes.Inc()
	}
}

// startBuckets span a session opened in the spare (a few milliseconds) to
// a real engine's CLI starting on a busy machine (seconds).
var startBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// errorCode is the wire code of err, or internal for an error without one.
func errorCode(err error) string {
	var we *wire.Error
	if errors.As(err, &we) && we.Code != "" {
		return string(we.Code)
	}
	return string(wire.CodeInternal)
}

// factory makes metrics registered in one registry under the namespace.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
